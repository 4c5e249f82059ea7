// Registers `--impl fast`: the kernel entry's checks (oracle/validate.h), then the optimised SIMD CPU kernel (kernels/fast/).
#include <algorithm>
#include <string>
#include <vector>

#include "harness/impls.h"
#include "harness/problem.h"
#include "kernels/fast/fast_attention.h"
#include "kernels/fast/native_kv.h"
#include "oracle/py_error.h"
#include "oracle/validate.h"

namespace rpa {
namespace {

// The TPU kernel's refusal of head counts it cannot tile
// (get_min_heads_per_blk, kernel.py:697); the fast kernel has no such limit.
bool is_untiled_heads_error(const PyError& e) {
  return e.message().find("can not be XLA fully tiled") != std::string::npos;
}

ImplOutput run_fast(const Case& c, const ImplOptions& options) {
  // ragged_paged_attention's checks before pallas_call, raised as it does;
  // with allow_untiled_heads the seed's fallback: run head counts the TPU
  // kernel rejects anyway.
  try {
    (void)kernel_entry_config(c.call, options.device_kind);
  } catch (const PyError& e) {
    if (!(options.allow_untiled_heads && is_untiled_heads_error(e))) throw;
  }
  ProblemBuffers buffers;
  make_problem(c, buffers);
  rpa_problem& p = buffers.problem;
  p.num_threads = options.threads;
  p.allow_untiled_heads = options.allow_untiled_heads ? 1 : 0;

  const fast::NativeKv kv = fast::encode_kv(p);
  std::vector<float> out(size_t(p.num_tokens * p.num_q_heads * p.head_dim));
  ImplOutput o;
  const rpa_status st = fast::attention(p, kv, out.data(), &o.diagnostics);
  if (st.code == RPA_ERR_REJECTED) throw PyError(st.error_class ? st.error_class : "ValueError", st.message);
  if (st.code != RPA_OK) throw CaseError((c.where.empty() ? c.id : c.where) + ": " + (st.message ? st.message : ""));

  o.rows = std::clamp<int64_t>(output_rows(p), 0, p.num_tokens);
  o.num_q_heads = p.num_q_heads;
  o.head_dim = p.head_dim;
  o.values.assign(out.begin(), out.begin() + o.rows * p.num_q_heads * p.head_dim);
  return o;
}

const ImplRegistration kFast("fast",
                             "optimised multi-threaded SIMD CPU kernel (Highway dynamic dispatch): flash attention "
                             "over pages, masked blocks skipped where provably exact (docs/fast_kernel.md)",
                             run_fast);

}  // namespace
}  // namespace rpa
