// Case -> rpa_problem: materialised tensors and options converted as the float32 math sees them.
#include "harness/problem.h"

#include <cmath>
#include <limits>

#include "kernels/abi_dtype.h"
#include "oracle/reference_plan.h"

namespace rpa {
namespace {

[[noreturn]] void bad(const Case& c, const std::string& field, const std::string& what) {
  throw CaseError(c.where + ": field '" + field + "': " + what);
}

std::vector<int32_t> int32_values(const Case& c, const IndexArg& a, const char* field, size_t rank) {
  if (a.shape.size() != rank) bad(c, field, "has rank " + std::to_string(a.shape.size()) + ", expected " + std::to_string(rank));
  if (!a.has_data) bad(c, std::string(field) + ".data", "missing (attention needs the values)");
  std::vector<int32_t> v(a.data.size());
  for (size_t i = 0; i < v.size(); ++i) {
    if (a.data[i] < std::numeric_limits<int32_t>::min() || a.data[i] > std::numeric_limits<int32_t>::max())
      bad(c, std::string(field) + ".data[" + std::to_string(i) + "]", "outside int32");
    v[i] = int32_t(a.data[i]);
  }
  return v;
}

rpa_dtype abi_dtype(const Case& c, DType d, const char* field) {
  if (!dtype_info(d).computable)
    bad(c, std::string(field) + ".dtype", std::string(dtype_name(d)) + " is not a q/KV dtype attention runs with");
  return abi_dtype_of(d);
}

// A Python scalar meeting a float32 array is converted to float32
// (weak typing), i.e. the double rounded to nearest.
float as_f32(const PyValue& v) { return static_cast<float>(v.as_double()); }

int64_t block_option(const Case& c, const PyValue& v, const char* field) {
  if (v.is_none()) return 0;
  if (v.kind != PyValue::Kind::kInt || v.i <= 0 || v.i > std::numeric_limits<int32_t>::max())
    bad(c, field, "expected a positive integer block size");
  return static_cast<int64_t>(v.i);
}

}  // namespace

void make_problem(const Case& c, ProblemBuffers& out, bool with_kv_pages) {
  const CallArgs& a = c.call;
  if (a.q.shape.size() != 3) bad(c, "q.shape", "expected [T, Hq, D]");
  if (a.kv_pages.shape.size() != 4) bad(c, "kv_pages.shape", "expected [P, page_size, Hc, D]");
  rpa_problem& p = out.problem;
  p = rpa_problem{};
  p.abi_version = RPA_ABI_VERSION;
  p.q_dtype = abi_dtype(c, a.q.dtype, "q");
  p.kv_dtype = abi_dtype(c, a.kv_pages.dtype, "kv_pages");
  p.num_tokens = a.q.shape[0];
  p.num_q_heads = a.q.shape[1];
  p.head_dim = a.q.shape[2];
  p.total_num_pages = a.kv_pages.shape[0];
  p.page_size = a.kv_pages.shape[1];
  p.num_combined_kv_heads = a.kv_pages.shape[2];
  if (a.kv_pages.shape[3] != p.head_dim) bad(c, "kv_pages.shape", "head_dim differs from q's");
  out.kv_lens = int32_values(c, a.kv_lens, "kv_lens", 1);
  out.page_indices = int32_values(c, a.page_indices, "page_indices", 2);
  out.cu_q_lens = int32_values(c, a.cu_q_lens, "cu_q_lens", 1);
  const auto num_seqs = int32_values(c, a.num_seqs, "num_seqs", 1);
  if (num_seqs.size() != 1) bad(c, "num_seqs", "expected one value");
  p.max_num_seqs = a.page_indices.shape[0];
  p.pages_per_seq = a.page_indices.shape[1];
  if (int64_t(out.kv_lens.size()) != p.max_num_seqs || int64_t(out.cu_q_lens.size()) != p.max_num_seqs + 1)
    bad(c, "kv_lens", "shapes of kv_lens / cu_q_lens disagree with page_indices");
  out.q = materialise_q(c);
  if (with_kv_pages) out.kv_pages = materialise_kv(c);
  p.q = out.q.data();
  p.kv_pages = with_kv_pages ? out.kv_pages.data() : nullptr;
  p.kv_lens = out.kv_lens.data();
  p.page_indices = out.page_indices.data();
  p.cu_q_lens = out.cu_q_lens.data();
  p.num_seqs = num_seqs[0];

  p.sm_scale = a.sm_scale.is_none() ? 1.0f : as_f32(a.sm_scale);
  if (!a.sliding_window.is_none()) {
    p.has_sliding_window = 1;
    // q_span - w >= kv_span holds for integer spans exactly when it holds
    // for ceil(w), so a float window is its ceiling.
    if (a.sliding_window.kind == PyValue::Kind::kInt) {
      if (a.sliding_window.i > std::numeric_limits<int32_t>::max() || a.sliding_window.i < std::numeric_limits<int32_t>::min())
        bad(c, "sliding_window", "outside int32 (JAX cannot combine it with int32 positions)");
      p.sliding_window = static_cast<int64_t>(a.sliding_window.i);
    } else {
      p.sliding_window = static_cast<int64_t>(std::ceil(a.sliding_window.as_double()));
    }
  }
  if (!a.soft_cap.is_none()) p.has_soft_cap = 1, p.soft_cap = as_f32(a.soft_cap);
  // None means DEFAULT_MASK_VALUE (kernel.py:32, 102-103).
  p.mask_value = a.mask_value.is_none() ? default_mask_value_f32() : as_f32(a.mask_value);
  if (!a.k_scale.is_none()) p.has_k_scale = 1, p.k_scale = as_f32(a.k_scale);
  if (!a.v_scale.is_none()) p.has_v_scale = 1, p.v_scale = as_f32(a.v_scale);
  p.num_kv_pages_per_block = block_option(c, a.num_kv_pages_per_block, "num_kv_pages_per_block");
  p.num_queries_per_block = block_option(c, a.num_queries_per_block, "num_queries_per_block");
}

int64_t output_rows(const rpa_problem& p) {
  const int64_t size = p.max_num_seqs + 1;
  int64_t i = p.num_seqs;
  if (i < 0) i += size;  // JAX: a negative index wraps once ...
  if (i < 0) i = 0;      // ... then clamps.
  if (i > size - 1) i = size - 1;
  return p.cu_q_lens[i];
}

}  // namespace rpa
