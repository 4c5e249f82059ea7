// The reference attention: ref_ragged_paged_attention (kernel.py:73-148) in float32 exactly as JAX on a CPU computes it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "oracle/call_args.h"

namespace rpa {

struct AttentionOutput {
  int64_t rows = 0, num_q_heads = 0, head_dim = 0;
  // [rows, num_q_heads, head_dim] row-major: values of the output dtype
  // (q's, kernel.py:145), widened to float32 exactly.
  std::vector<float> values;
  std::vector<std::string> diagnostics;  // e.g. page indices outside [0, total_num_pages)
};

// Runs the reference on `a` with tensor contents `q` ([T, Hq, D]) and
// `kv_pages` ([P, page_size, Hc, D]), values of their dtypes widened to
// float32. Output rows are those the Python concatenates: every sequence's
// query slice, normally cu_q_lens[num_seqs]. Throws PyError as the Python
// reference raises (static validation first, then the loop's JAX errors),
// std::invalid_argument when the index tensors lack data or a tensor's size
// disagrees with its shape.
//
// Arithmetic (see oracle/einsum_dtypes.h for the dtype of every step):
//  - both einsums: products are exact in double (each factor has at most 24
//    significant bits); they are summed in double, so the sum differs from
//    the exact one by at most n * 2^-53 * sum|products|, and rounded once to
//    float32, then along XLA:CPU's conversion chain to the einsum's result
//    dtype. XLA accumulates in float32 (an error up to n * 2^-24 relative to
//    sum|products|), so this is the exactly rounded result XLA approximates;
//  - float32 elementwise operations are IEEE float32 operations, as XLA's;
//  - exp and tanh are correctly rounded float32 functions
//    (oracle/correct_math.h); XLA's own are within a few ulps of them;
//  - the softmax sum: a double sum of float32 terms rounded to float32.
// `threads` > 1 splits the work by (sequence, KV head); results do not
// depend on it.
AttentionOutput ref_ragged_paged_attention(const CallArgs& a, std::span<const float> q,
                                           std::span<const float> kv_pages, int threads = 1);

}  // namespace rpa
