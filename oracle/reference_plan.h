// The index arithmetic of ref_ragged_paged_attention: rows each sequence reads, its mask, its options, what Python raises.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "oracle/call_args.h"
#include "oracle/einsum_dtypes.h"
#include "oracle/py_error.h"

namespace rpa {

// The keyword options as the float32 math sees them (kernel.py:81-86). A
// Python scalar is weakly typed: meeting a float32 array it becomes float32
// (a float is rounded to nearest; an int must fit int32, since jit-compiled
// jnp operations abstract a Python int as a weak int32 (_int_aval,
// jax/_src/abstract_arrays.py:97-106), then int32 -> float32 rounds; a bool
// is 0 or 1).
struct ReferenceOptions {
  float sm_scale = 1.0f;
  bool has_sliding_window = false;
  // An int (or bool) window meets the int32 positions as int32
  // (`q_span - sliding_window`, kernel.py:140); a float one turns the
  // comparison into float32 arithmetic.
  bool sliding_window_is_float = false;
  int32_t sliding_window = 0;
  float sliding_window_f32 = 0;
  bool has_soft_cap = false;
  float soft_cap = 0;
  // None -> DEFAULT_MASK_VALUE = -0.7 * float32 max (kernel.py:32, 102-103),
  // a Python float rounded to float32 where it meets the scores.
  float mask_value = 0;
  bool has_k_scale = false, has_v_scale = false;
  float k_scale = 0, v_scale = 0;
};

// A Python scalar's float32 value where it meets a float32 array (assumes
// an int fits int32).
float python_scalar_to_f32(const PyValue& v);

// DEFAULT_MASK_VALUE rounded to float32.
float default_mask_value_f32();

// One sequence of the loop `for i in range(num_seqs[0])` (kernel.py:111)
// that contributes output rows.
struct SeqPlan {
  int64_t seq = 0;        // i
  int64_t q_begin = 0;    // queries[q_start:q_end] (numpy slice semantics on the int32 values)
  int64_t q_rows = 0;     // rows of that slice (> 0)
  int64_t out_begin = 0;  // first output row (rows of earlier sequences)
  int32_t q_len = 0;      // q_end - q_start in int32 (wrapping), what the mask sees
  int32_t kv_len = 0;     // kv_lens[i], what the mask sees
  int64_t kv_rows = 0;    // rows of K and V after `[:kv_len]` (a numpy slice: negative cuts from the end)
  // Physical page of each gathered page row that the cut keeps, after JAX's
  // index normalisation: a negative index wraps once (+ total_num_pages),
  // then the gather clamps to [0, total_num_pages - 1].
  std::vector<int64_t> pages;
};

struct ReferencePlan {
  ReferenceOptions options;
  ReferenceDtypes dtypes;
  int64_t num_tokens = 0, num_q_heads = 0, head_dim = 0;
  int64_t total_num_pages = 0, page_size = 0, num_combined_kv_heads = 0;
  int64_t num_kv_heads = 0, q_per_kv = 0;  // GQA: q head h reads KV head h / q_per_kv (jnp.repeat, kernel.py:130)
  int64_t rows = 0;                        // output rows: the concatenation of every sequence's slice
  std::vector<SeqPlan> seqs;
  // Page indices used whose value lies outside [0, total_num_pages): JAX
  // reads the wrapped / clamped page, the TPU kernel whatever the index
  // names. One line each (at most a few, then a count).
  std::vector<std::string> diagnostics;
};

// Runs what the Python reference runs before and around its arithmetic:
// static_validate_inputs, the loop's indexing, and the errors JAX raises on
// the way (all as PyError, in source order); std::invalid_argument when an
// index tensor lacks data or its data disagrees with its shape.
ReferencePlan plan_reference(const CallArgs& a);

// Throws std::invalid_argument unless q and kv_pages hold exactly as many
// values as their shapes (shared by the reference and the truth).
void check_contents(const CallArgs& a, std::span<const float> q, std::span<const float> kv_pages);

// mask[r, c] of kernel.py:134-140 for query row r of the slice and key c.
bool is_masked(const ReferencePlan& p, const SeqPlan& s, int64_t r, int64_t c);

// Offset into kv_pages' values (row-major [P, page_size, Hc, D]) of key c,
// combined head `combined_head` (K of KV head g is 2g, V is 2g + 1), dim d.
inline int64_t kv_offset(const ReferencePlan& p, const SeqPlan& s, int64_t c, int64_t combined_head, int64_t d) {
  const int64_t page = s.pages[static_cast<size_t>(c / p.page_size)];
  return ((page * p.page_size + c % p.page_size) * p.num_combined_kv_heads + combined_head) * p.head_dim + d;
}

// Offset into queries' values of slice row r, q head h, dim d.
inline int64_t q_offset(const ReferencePlan& p, const SeqPlan& s, int64_t r, int64_t h, int64_t d) {
  return ((s.q_begin + r) * p.num_q_heads + h) * p.head_dim + d;
}

// K (k == true) or V of KV head g at key c, dim d, dequantised as the
// source does: `x.astype(f32) * scale` in float32, then `.astype(q.dtype)`
// (kernel.py:124-129); the stored value when there is no scale.
float dequantised_kv(const ReferencePlan& p, const SeqPlan& s, const float* kv, bool k, int64_t c, int64_t g,
                     int64_t d);

}  // namespace rpa
