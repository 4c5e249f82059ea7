// Output rows whose float32 scores overflowed, recomputed in double precision (the exact math's range).
#pragma once

#include <cstdint>

#include "kernels/fast/plan.h"
#include "rpa/rpa.h"

namespace rpa::fast {

// After run_plan and merge_partials, where the exact score recomputation
// met a score float32 cannot hold (KernelCtx::nonfinite_exact_scores): a
// score past 3.4e38 (sm_scale 1e37, say) is Inf in float32, e^(Inf - Inf)
// is NaN, and the row comes out NaN - as the reference's float32 softmax
// does (kernel.py:142) - where the exact math is finite (the largest
// scores' keys take all the weight). Every output row of `plan` holding a
// NaN or Inf whose q row and dequantised K and V are finite is recomputed
// here with the softmax in double (range 1e308): the scores as
// double-double sums of the exact products, so keys whose dot products are
// equal stay equal; the mask term and soft cap as the tiles apply them
// (row_range); the weights and p.v in double, rounded once to q's dtype.
// Rows whose inputs hold a NaN or Inf keep the kernel's answer (the
// reference's poisoning, which the exact math shares). On `threads`
// threads, claiming (sequence, KV head, 16 tokens) units, each KV head's
// K and V dequantised once per thread that meets it; returns how many rows
// were rewritten.
int64_t recompute_nonfinite_rows(const Plan& plan, const rpa_problem& p, int threads);

}  // namespace rpa::fast
