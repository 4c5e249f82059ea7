// Derives and checks the kernel's block geometry for the tiled emulation.
#include "kernels/tiled/tiled_geometry.h"

#include "kernels/abi_dtype.h"

namespace rpa::tiled {
namespace {

// Scratch larger than this (in 4-byte elements) is refused: a TPU's VMEM is
// tens of MiB, so only block sizes the real kernel could never compile get here.
constexpr int64_t kMaxScratchElements = int64_t{1} << 28;

std::string num(int64_t v) { return std::to_string(v); }

}  // namespace

std::string make_geometry(const rpa_problem& p, const TiledConfig& cfg, Geometry& g) {
  g = Geometry{};
  if (p.abi_version != RPA_ABI_VERSION) return "rpa_problem.abi_version " + num(p.abi_version) + " is not " + num(RPA_ABI_VERSION);
  g.q_dtype = dtype_of(p.q_dtype);
  g.kv_dtype = dtype_of(p.kv_dtype);
  g.num_tokens = p.num_tokens;
  g.num_q_heads = p.num_q_heads;
  g.head_dim = p.head_dim;
  g.total_num_pages = p.total_num_pages;
  g.page_size = p.page_size;
  g.num_combined_kv_heads = p.num_combined_kv_heads;
  g.max_num_seqs = p.max_num_seqs;
  g.pages_per_seq = p.pages_per_seq;
  if (g.num_tokens < 0 || g.num_q_heads <= 0 || g.head_dim <= 0 || g.total_num_pages < 0 || g.max_num_seqs < 0 ||
      g.pages_per_seq < 0 || g.num_combined_kv_heads <= 0)
    return "rpa_problem has a negative or zero dimension";
  if (g.page_size <= 0) return "page_size " + num(g.page_size) + ": the kernel divides by it (pl.cdiv, kernel.py:343)";
  if (g.num_combined_kv_heads % 2 != 0) return "num_combined_kv_heads must be even (kernel.py:798)";

  g.num_q_heads_per_blk = cfg.num_q_heads_per_blk;
  g.num_combined_kv_heads_per_blk = cfg.num_combined_kv_heads_per_blk;
  g.num_kv_pages_per_blk = cfg.num_kv_pages_per_blk > 0 ? cfg.num_kv_pages_per_blk : p.num_kv_pages_per_block;
  g.num_q_per_blk = cfg.num_q_per_blk > 0 ? cfg.num_q_per_blk : p.num_queries_per_block;
  if (g.num_q_heads_per_blk <= 0 || g.num_combined_kv_heads_per_blk <= 0)
    return "the head blocking (get_min_heads_per_blk) was not given";
  if (g.num_kv_pages_per_blk <= 0) return "num_kv_pages_per_blk is 0: the kernel's KV loop would never end";
  if (g.num_q_per_blk <= 0) return "num_q_per_blk is not positive";
  // kernel.py:819-822 and the kernel body's own divisions (kernel.py:325-327).
  if (g.num_combined_kv_heads_per_blk % 2 != 0) return "num_combined_kv_heads_per_blk must be even (kernel.py:819)";
  g.num_kv_heads_per_blk = g.num_combined_kv_heads_per_blk / 2;
  const int64_t num_kv_heads = g.num_combined_kv_heads / 2;
  if (g.num_q_heads % num_kv_heads != 0) return "num_q_heads must be a multiple of num_kv_heads";
  const int64_t ratio = g.num_q_heads / num_kv_heads;
  if (g.num_q_heads_per_blk % ratio != 0) return "num_q_heads_per_blk is not a multiple of the GQA ratio (kernel.py:821)";
  if (g.num_q_heads % g.num_q_heads_per_blk != 0) return "num_q_heads_per_blk does not divide num_q_heads";
  g.num_q_heads_per_kv_head = g.num_q_heads_per_blk / g.num_kv_heads_per_blk;
  if (g.num_q_heads_per_kv_head != ratio || g.num_q_heads_per_kv_head * g.num_kv_heads_per_blk != g.num_q_heads_per_blk)
    return "head blocks of q and KV disagree: " + num(g.num_q_heads_per_blk) + " q heads vs " +
           num(g.num_combined_kv_heads_per_blk) + " combined KV heads per block";
  g.num_heads_blks = g.num_q_heads / g.num_q_heads_per_blk;
  if (g.num_heads_blks * g.num_combined_kv_heads_per_blk > g.num_combined_kv_heads)
    return "the head blocks cover more KV heads than kv_pages holds";
  g.kv_packing = 32 / dtype_bits(g.kv_dtype);
  // strided_load_kv asserts step % packing == 0 (kernel.py:366); the head
  // blocking guarantees it, so a violation is a caller error, not a trace.
  if (g.num_combined_kv_heads_per_blk % g.kv_packing != 0 || g.num_combined_kv_heads % g.kv_packing != 0)
    return "combined KV heads per block are not a multiple of the KV packing " + num(g.kv_packing);
  g.words_per_token_blk = g.num_combined_kv_heads_per_blk / g.kv_packing;
  g.words_per_token = g.num_combined_kv_heads / g.kv_packing;

  if (g.num_kv_pages_per_blk > kMaxScratchElements / g.page_size) return "num_kv_pages_per_blk * page_size is too large";
  g.num_kv_per_blk = g.num_kv_pages_per_blk * g.page_size;
  g.num_q_blks = g.num_tokens == 0 ? 0 : (g.num_tokens + g.num_q_per_blk - 1) / g.num_q_per_blk;
  g.rows_alloc = g.num_q_per_blk < g.num_tokens ? g.num_q_per_blk : g.num_tokens;

  const double acc = double(g.rows_alloc) * double(g.num_q_heads_per_blk) * double(g.head_dim);
  const double lm = double(g.num_kv_heads_per_blk) * double(g.rows_alloc) * double(g.num_q_heads_per_kv_head) * 128.0;
  const double buf = double(g.num_kv_per_blk) * double(g.words_per_token_blk) * double(g.head_dim);
  const double hbm = double(g.total_num_pages) * double(g.page_size) * double(g.words_per_token) * double(g.head_dim);
  const double lim = double(kMaxScratchElements);
  if (acc > lim || lm > lim || buf > lim || hbm > 4 * lim) return "block or page sizes too large to emulate";
  return "";
}

}  // namespace rpa::tiled
