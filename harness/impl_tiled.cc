// Registers `--impl tiled`: the kernel entry's checks (oracle/validate.h), then the CPU emulation of the Pallas kernel's schedule.
#include <algorithm>
#include <vector>

#include "harness/impls.h"
#include "harness/problem.h"
#include "kernels/tiled/tiled_attention.h"
#include "oracle/py_error.h"
#include "oracle/validate.h"

namespace rpa {
namespace {

ImplOutput run_tiled(const Case& c, const ImplOptions& options) {
  // What ragged_paged_attention does before pallas_call: raises as it does.
  const KernelConfig k = kernel_entry_config(c.call, options.device_kind);
  ProblemBuffers buffers;
  make_problem(c, buffers);
  rpa_problem& p = buffers.problem;
  p.num_kv_pages_per_block = k.blocks.num_kv_pages_per_blk;
  p.num_queries_per_block = k.blocks.num_q_per_blk;
  p.num_threads = options.threads;

  tiled::TiledConfig cfg;
  cfg.num_q_heads_per_blk = k.heads.num_q_heads_per_blk;
  cfg.num_combined_kv_heads_per_blk = k.heads.num_combined_kv_heads_per_blk;
  std::vector<float> out(size_t(p.num_tokens * p.num_q_heads * p.head_dim));
  tiled::Diagnostics diags;
  const tiled::TiledResult r = tiled::tiled_attention(p, cfg, out.data(), diags);
  if (r.code == RPA_ERR_REJECTED) throw PyError(r.error_class, r.message);
  if (r.code != RPA_OK) throw CaseError((c.where.empty() ? c.id : c.where) + ": " + r.message);

  ImplOutput o;
  o.rows = std::clamp<int64_t>(output_rows(p), 0, p.num_tokens);
  o.num_q_heads = p.num_q_heads;
  o.head_dim = p.head_dim;
  o.values.assign(out.begin(), out.begin() + o.rows * p.num_q_heads * p.head_dim);
  o.diagnostics = diags.lines();
  return o;
}

const ImplRegistration kTiled("tiled",
                              "CPU emulation of the Pallas kernel's schedule: head blocks, q blocks, double-buffered "
                              "KV blocks, packed K/V, online softmax (docs/tiled.md)",
                              run_tiled);

}  // namespace
}  // namespace rpa
