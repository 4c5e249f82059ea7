// Case -> outcome: which mirrored entry runs, and the outcome's one-line JSON form.
#include "harness/outcome.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "oracle/py_error.h"
#include "oracle/reference_plan.h"

namespace rpa {
namespace {

std::string json_string(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// json.dumps of a Python scalar (allow_nan=True: NaN, Infinity, -Infinity).
std::string json_value(const PyValue& v) {
  switch (v.kind) {
    case PyValue::Kind::kNone: return "null";
    case PyValue::Kind::kBool: return v.b ? "true" : "false";
    case PyValue::Kind::kInt: return v.i.str();
    case PyValue::Kind::kFloat:
      if (std::isnan(v.f)) return "NaN";
      if (std::isinf(v.f)) return v.f > 0 ? "Infinity" : "-Infinity";
      return py_float_repr(v.f);
  }
  return "null";
}

}  // namespace

Outcome run_outcome(const Case& c, const std::string& default_device_kind) {
  Outcome o;
  o.id = c.id;
  const CallArgs& a = c.call;
  try {
    switch (c.entry) {
      case Entry::kStatic: static_validate_inputs(a); break;
      case Entry::kDynamic: dynamic_validate_inputs(a); break;
      case Entry::kKernel: o.kernel = ragged_paged_attention_entry(a, default_device_kind); break;
      case Entry::kReference:
        reference_entry_checks(a);
        // The loop's own errors (indexing, conversions) come from the
        // reference's plan; it runs for the dtypes the attention math
        // supports (for others the Python math is not mirrored: ok).
        if (dtype_info(a.q.dtype).computable && dtype_info(a.kv_pages.dtype).computable) plan_reference(a);
        break;
    }
    o.ok = true;
  } catch (const PyError& e) {
    o.ok = false;
    o.error = e.cls();
    o.message = e.message();
  } catch (const std::invalid_argument& e) {
    // Data the entry reads once validation got that far (Python would have
    // had the array): the case is malformed.
    throw CaseError(c.where + ": " + e.what());
  }
  return o;
}

std::string outcome_json(const Outcome& o) {
  std::string s = "{\"id\":" + json_string(o.id);
  if (!o.ok) return s + ",\"error\":" + json_string(o.error) + ",\"message\":" + json_string(o.message) + "}";
  s += ",\"ok\":true";
  if (o.kernel) {
    s += ",\"num_q_heads_per_blk\":" + std::to_string(o.kernel->heads.num_q_heads_per_blk);
    s += ",\"num_combined_kv_heads_per_blk\":" + std::to_string(o.kernel->heads.num_combined_kv_heads_per_blk);
    s += ",\"num_kv_pages_per_blk\":" + json_value(o.kernel->num_kv_pages_per_blk);
    s += ",\"num_q_per_blk\":" + json_value(o.kernel->num_q_per_blk);
  }
  return s + "}";
}

}  // namespace rpa
