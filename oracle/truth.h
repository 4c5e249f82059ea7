// The high-precision truth of the reference attention: the same math with exact arithmetic between the source's rounding points, or none at all.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "oracle/call_args.h"

namespace rpa {

enum class TruthMode {
  // Exact arithmetic between the rounding points of the Python source: each
  // jnp operation's exact result rounded once to its dtype (einsum results,
  // float32 elementwise operations, exp and tanh, the softmax sum, the casts
  // to V's and q's dtypes). Einsums are rounded straight from the exact sum
  // to their result dtype, with none of XLA:CPU's intermediate float32 /
  // float16 steps.
  kRounded,
  // No rounding at all after the inputs as the math sees them (q; K and V
  // after the source's dequantisation; the options as float32): scores,
  // softmax (without the cast to V's dtype) and p.v in 50-digit arithmetic,
  // the output not rounded to q's dtype either.
  kExact,
};

struct TruthOptions {
  TruthMode mode = TruthMode::kRounded;
  // Decide every rounding with exact arithmetic (ExactSum, 50-digit exp and
  // tanh) instead of the proven double filters of oracle/correct_math.h.
  // The results are identical by construction; tests use this to check it.
  bool no_filters = false;
  // Rounded mode: the half-width, in float32 ulps of each probability, of the
  // window within which a probability counts as near a rounding boundary of
  // its cast to V's dtype (for `widen`); 0 skips that computation.
  double widen_window_ulps = 4;
  int threads = 1;
};

struct TruthOutput {
  int64_t rows = 0, num_q_heads = 0, head_dim = 0;
  // [rows, Hq, D]: rounded mode, values of the output dtype; exact mode, the
  // exact value rounded to double.
  std::vector<double> values;
  // Rounded mode, per element: sum over the keys whose float32 probability
  // p lies within widen_window_ulps of a rounding boundary of p.astype(V) of
  // |cast(p +- window) - cast(p)| * |v|: how far the exact p.v can move when
  // those probabilities round the other way. Zero elsewhere.
  std::vector<double> widen;
  // Per element: max |V| (dequantised) over the keys the row attends (every
  // key when all are masked, as the reference then averages them all; every
  // key too when mask_value is finite and above -1000, as masked keys then
  // carry weight).
  std::vector<double> v_abs_max;
  // Rounded mode, per element: 1 where the reference's own float32 math, not
  // its rounding, moved the row away from the exact truth: the row's float32
  // q.k (kernel.py:132) overflowed to +-Inf for some key although the exact
  // dot is finite (a k_scale near 1e38 under a tiny sm_scale, say), or the
  // row's largest float32 score is 2^24 or more in magnitude, where float32
  // cannot tell scores 1 apart (a soft_cap of 1e30 over huge q.k, a
  // positive huge mask_value, every key masked by a mask_value of -2.4e38).
  std::vector<char> scores_off_exact;
  std::vector<std::string> diagnostics;
};

// The truth of ref_ragged_paged_attention for `a` with contents `q` and
// `kv_pages`; raises and rejects exactly as ref_ragged_paged_attention
// (oracle/reference.h) does.
TruthOutput truth_ragged_paged_attention(const CallArgs& a, std::span<const float> q,
                                         std::span<const float> kv_pages, const TruthOptions& options = {});

}  // namespace rpa
