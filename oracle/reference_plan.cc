// Index arithmetic and Python-level errors of ref_ragged_paged_attention (kernel.py:73-148 at cec06d116c).
#include "oracle/reference_plan.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "oracle/messages.h"
#include "oracle/validate.h"

namespace rpa {
namespace {

// JAX errors the reference's loop body can reach that the validation table
// (oracle/messages.cc) does not hold; one place, with their sources.
PyError index_on_empty_axis() {
  // kv_lens[i] with max_num_seqs == 0: the static-slice and dynamic-slice
  // attempts fail and _index_to_gather raises (jax/_src/numpy/indexing.py:1413-1415).
  return PyError("IndexError", "index is out of bounds for axis 0 with size 0");
}
PyError gather_from_no_pages() {
  // kv_pages[indices, ...] with total_num_pages == 0 and a non-empty slice:
  // _gather_shape_rule (jax/_src/lax/slicing.py:1944-1952) for operand axis 0.
  return PyError("TypeError", "Slice size at index 0 in gather op is out of range, must be within [0, 0 + 1), got 1.");
}
PyError python_int_too_large(const PyValue& v) {
  // A Python int argument of a jit-compiled jnp operation beyond int32
  // (_int_aval, jax/_src/abstract_arrays.py:103-105, x64 disabled).
  return PyError("OverflowError", "Python int " + v.i.str() + " too large to convert to int32");
}

bool int_beyond_int32(const PyValue& v) {
  return v.kind == PyValue::Kind::kInt &&
         (v.i > std::numeric_limits<int32_t>::max() || v.i < std::numeric_limits<int32_t>::min());
}

int32_t wrap32(int64_t v) { return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(v))); }

std::vector<int64_t> index_data(const IndexArg& a, const char* name, int64_t expected) {
  if (!a.has_data) throw std::invalid_argument(std::string(name) + " has no data (the reference reads it)");
  if (static_cast<int64_t>(a.data.size()) != expected)
    throw std::invalid_argument(std::string(name) + " holds " + std::to_string(a.data.size()) + " values, its shape " +
                                std::to_string(expected));
  return a.data;
}

// numpy's slice(start, stop).indices(n) for step 1: the clamped bounds.
int64_t slice_bound(int64_t x, int64_t n) {
  if (x < 0) x += n;
  return std::clamp<int64_t>(x, 0, n);
}

// The options, and the first error the loop body would raise converting
// them (kernel.py:133, 140, 142, 143 in that order).
struct Options {
  ReferenceOptions o;
  std::optional<PyError> loop_error;
};

Options convert_options(const CallArgs& a) {
  Options r;
  auto note = [&](const PyValue& v) {
    if (!r.loop_error && int_beyond_int32(v)) r.loop_error = python_int_too_large(v);
  };
  ReferenceOptions& o = r.o;
  if (!a.sm_scale.is_none()) {  // default sm_scale=1.0 (kernel.py:81)
    note(a.sm_scale);
    o.sm_scale = python_scalar_to_f32(a.sm_scale);
  }
  if (!a.sliding_window.is_none()) {
    note(a.sliding_window);
    o.has_sliding_window = true;
    if (a.sliding_window.kind == PyValue::Kind::kFloat) {
      o.sliding_window_is_float = true;
      o.sliding_window_f32 = static_cast<float>(a.sliding_window.f);
    } else if (a.sliding_window.kind == PyValue::Kind::kBool) {
      o.sliding_window = a.sliding_window.b ? 1 : 0;
    } else if (!int_beyond_int32(a.sliding_window)) {
      o.sliding_window = a.sliding_window.i.convert_to<int32_t>();
    }
  }
  if (!a.soft_cap.is_none()) {
    note(a.soft_cap);
    o.has_soft_cap = true;
    o.soft_cap = python_scalar_to_f32(a.soft_cap);
  }
  if (a.mask_value.is_none()) {
    o.mask_value = default_mask_value_f32();
  } else {
    note(a.mask_value);
    o.mask_value = python_scalar_to_f32(a.mask_value);
  }
  // static validation asserts both scales are floats or None (kernel.py:239-240).
  if (!a.k_scale.is_none()) o.has_k_scale = true, o.k_scale = static_cast<float>(a.k_scale.as_double());
  if (!a.v_scale.is_none()) o.has_v_scale = true, o.v_scale = static_cast<float>(a.v_scale.as_double());
  return r;
}

}  // namespace

float python_scalar_to_f32(const PyValue& v) {
  switch (v.kind) {
    case PyValue::Kind::kBool: return v.b ? 1.0f : 0.0f;
    case PyValue::Kind::kInt: return int_beyond_int32(v) ? 0.0f : static_cast<float>(v.i.convert_to<int32_t>());
    case PyValue::Kind::kFloat: return static_cast<float>(v.f);
    case PyValue::Kind::kNone: break;
  }
  return 0.0f;
}

float default_mask_value_f32() {
  // -0.7 * float(jnp.finfo(jnp.dtype("float32")).max), computed in Python
  // (double) arithmetic, then rounded to float32.
  return static_cast<float>(-0.7 * static_cast<double>(std::numeric_limits<float>::max()));
}

ReferencePlan plan_reference(const CallArgs& a) {
  // kernel.py:88-111: static validation, then range(num_seqs[0]); no
  // sequence at all ends in jnp.concatenate([]) (kernel.py:148).
  const int64_t n = reference_entry_checks(a);
  ReferencePlan p;
  p.num_tokens = a.q.shape[0];
  p.num_q_heads = a.q.shape[1];
  p.head_dim = a.q.shape[2];
  p.total_num_pages = a.kv_pages.shape[0];
  p.page_size = a.kv_pages.shape[1];
  p.num_combined_kv_heads = a.kv_pages.shape[2];
  p.num_kv_heads = p.num_combined_kv_heads / 2;  // kernel.py:104-106
  p.q_per_kv = p.num_q_heads / p.num_kv_heads;   // kernel.py:107-109 (validation made both exact)
  const int64_t max_num_seqs = a.page_indices.shape[0], pages_per_seq = a.page_indices.shape[1];
  const auto kv_lens = index_data(a.kv_lens, "kv_lens", max_num_seqs);
  const auto page_indices = index_data(a.page_indices, "page_indices", max_num_seqs * pages_per_seq);
  const auto cu_q_lens = index_data(a.cu_q_lens, "cu_q_lens", max_num_seqs + 1);
  for (DType d : {a.q.dtype, a.kv_pages.dtype})
    if (!dtype_info(d).computable)
      throw std::invalid_argument(std::string(dtype_name(d)) + " is not a dtype the attention math runs with");
  Options options = convert_options(a);
  p.options = options.o;
  p.dtypes = reference_dtypes(a.q.dtype, a.kv_pages.dtype, p.options.has_k_scale, p.options.has_v_scale);

  // The first iteration (n >= 1) meets these before any arithmetic, in
  // source order; every later iteration would meet the same ones.
  if (max_num_seqs == 0) throw index_on_empty_axis();  // kv_len = kv_lens[i] (kernel.py:115)
  const bool gather_nonempty = pages_per_seq > 0 && p.page_size > 0 && p.num_kv_heads > 0 && p.head_dim > 0;
  if (p.total_num_pages == 0 && gather_nonempty) throw gather_from_no_pages();  // kernel.py:118
  // .reshape(-1, num_kv_heads, head_dim) (kernel.py:118): _compute_newshape
  // takes arr.size % (num_kv_heads * head_dim) (jax/_src/numpy/array_methods.py:527-529).
  if (p.head_dim == 0) raise_py(Msg::kIntegerModuloByZero);
  if (options.loop_error) throw *options.loop_error;  // kernel.py:133-143

  // Iterations i >= max_num_seqs read cu_q_lens[i] and cu_q_lens[i + 1] at
  // an index JAX clamps to max_num_seqs (a static index out of bounds falls
  // back to lax.dynamic_slice, indexing.py:1121-1144), so their query slice
  // is empty and they add no rows.
  const int64_t visited = std::min<int64_t>(n, max_num_seqs);
  const int64_t gathered_rows = pages_per_seq * p.page_size;
  int64_t reported = 0, unreported = 0;
  for (int64_t i = 0; i < visited; ++i) {
    SeqPlan s;
    s.seq = i;
    const int64_t q_start = cu_q_lens[i], q_end = cu_q_lens[i + 1];
    s.q_begin = slice_bound(q_start, p.num_tokens);
    s.q_rows = std::max<int64_t>(0, slice_bound(q_end, p.num_tokens) - s.q_begin);
    s.q_len = wrap32(q_end - q_start);
    s.kv_len = static_cast<int32_t>(kv_lens[i]);
    s.kv_rows = slice_bound(s.kv_len, gathered_rows);  // [:kv_len]
    if (s.q_rows == 0) continue;
    const int64_t pages_used = p.page_size > 0 ? (s.kv_rows + p.page_size - 1) / p.page_size : 0;
    for (int64_t j = 0; j < pages_used; ++j) {
      const int64_t raw = page_indices[i * pages_per_seq + j];
      int64_t page = raw < 0 ? raw + p.total_num_pages : raw;  // NDIndexer.normalize_indices
      page = std::clamp<int64_t>(page, 0, p.total_num_pages - 1);  // XLA gather clamps start indices
      s.pages.push_back(page);
      if (raw < 0 || raw >= p.total_num_pages) {
        if (reported < 8) {
          p.diagnostics.push_back("page_indices[" + std::to_string(i) + ", " + std::to_string(j) + "] = " +
                                  std::to_string(raw) + " is outside [0, " + std::to_string(p.total_num_pages) +
                                  "): JAX's gather reads page " + std::to_string(page) +
                                  " (a negative index wraps once, then indices clamp); the TPU kernel copies "
                                  "whatever page the index names");
          ++reported;
        } else {
          ++unreported;
        }
      }
    }
    s.out_begin = p.rows;
    p.rows += s.q_rows;
    p.seqs.push_back(std::move(s));
  }
  if (unreported > 0)
    p.diagnostics.push_back("... and " + std::to_string(unreported) + " more page indices outside [0, " +
                            std::to_string(p.total_num_pages) + ")");
  return p;
}

bool is_masked(const ReferencePlan& p, const SeqPlan& s, int64_t r, int64_t c) {
  // q_span = (kv_len - q_len) + iota; kv_span = iota (kernel.py:134-137), int32.
  const int32_t q_span = wrap32(int64_t{wrap32(int64_t{s.kv_len} - s.q_len)} + r);
  const int32_t kv_span = static_cast<int32_t>(c);
  bool mask = q_span < kv_span;  // kernel.py:138
  if (p.options.has_sliding_window) {  // kernel.py:139-140
    if (p.options.sliding_window_is_float) {
      // int32 - weak float is float32 arithmetic, and the comparison with
      // the int32 kv_span promotes it to float32 too.
      const float lhs = static_cast<float>(q_span) - p.options.sliding_window_f32;
      mask = mask || lhs >= static_cast<float>(kv_span);
    } else {
      mask = mask || wrap32(int64_t{q_span} - p.options.sliding_window) >= kv_span;
    }
  }
  return mask;
}

float dequantised_kv(const ReferencePlan& p, const SeqPlan& s, const float* kv, bool k, int64_t c, int64_t g,
                     int64_t d) {
  const float raw = kv[kv_offset(p, s, c, 2 * g + (k ? 0 : 1), d)];
  const bool scaled = k ? p.options.has_k_scale : p.options.has_v_scale;
  if (!scaled) return raw;
  const float product = raw * (k ? p.options.k_scale : p.options.v_scale);  // float32 multiply
  return convert_value(DType::kFloat32, p.dtypes.q, product);
}

void check_contents(const CallArgs& a, std::span<const float> q, std::span<const float> kv_pages) {
  if (static_cast<int64_t>(q.size()) != num_elements(a.q.shape))
    throw std::invalid_argument("q holds " + std::to_string(q.size()) + " values, its shape " +
                                std::to_string(num_elements(a.q.shape)));
  if (static_cast<int64_t>(kv_pages.size()) != num_elements(a.kv_pages.shape))
    throw std::invalid_argument("kv_pages holds " + std::to_string(kv_pages.size()) + " values, its shape " +
                                std::to_string(num_elements(a.kv_pages.shape)));
}

}  // namespace rpa
