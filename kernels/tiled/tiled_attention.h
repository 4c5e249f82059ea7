// The tiled implementation: a CPU emulation of the Pallas RPA kernel's schedule (kernel.py at cec06d116c), run on an rpa_problem.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/tiled/tiled_config.h"
#include "kernels/tiled/tiled_diagnostics.h"
#include "rpa/rpa.h"

namespace rpa::tiled {

struct TiledResult {
  // RPA_OK; RPA_ERR_REJECTED with error_class "AssertionError" (a trace-time
  // assertion, only with TiledConfig::strict_trace_asserts);
  // RPA_ERR_UNSUPPORTED (a configuration the emulation cannot run: bad head
  // blocking, zero block sizes, the work budget spent).
  int32_t code = RPA_OK;
  std::string error_class;
  std::string message;  // str(e) for REJECTED; a one-line reason otherwise
};

// Runs ragged_paged_attention_kernel over its whole grid (kernel.py:290-675
// with the grid of kernel.py:817-899) and writes
// out[num_tokens * num_q_heads * head_dim]: every o block, as the kernel
// writes it at the end of each grid step (acc.astype(q dtype)). Rows below
// cu_q_lens[num_seqs] hold the attention output; rows past it hold stale
// accumulator values or the NaN that models uninitialised VMEM (docs/tiled.md).
// Findings (known divergences, trace-time asserts stepped over, out-of-bounds
// reads, double-buffer faults) go to `diags`. The block sizes come from `cfg`
// or, where 0 there, from the problem.
TiledResult tiled_attention(const rpa_problem& p, const TiledConfig& cfg, float* out, Diagnostics& diags);

}  // namespace rpa::tiled
