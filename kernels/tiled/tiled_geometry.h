// The sizes the Pallas kernel derives from its block shapes (kernel.py:319-327, 817-823), checked once.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/tiled/tiled_config.h"
#include "oracle/dtype.h"
#include "rpa/rpa.h"

namespace rpa::tiled {

struct Geometry {
  DType q_dtype = DType::kFloat32, kv_dtype = DType::kFloat32;
  // Array shapes.
  int64_t num_tokens = 0, num_q_heads = 0, head_dim = 0;
  int64_t total_num_pages = 0, page_size = 0, num_combined_kv_heads = 0;
  int64_t max_num_seqs = 0, pages_per_seq = 0;
  // Blocking.
  int64_t num_q_heads_per_blk = 0, num_combined_kv_heads_per_blk = 0, num_kv_heads_per_blk = 0;
  int64_t num_q_heads_per_kv_head = 0;  // kernel.py:327, the GQA group
  int64_t num_kv_pages_per_blk = 0, num_kv_per_blk = 0, num_q_per_blk = 0;
  int64_t num_heads_blks = 0, num_q_blks = 0;  // the grid, kernel.py:818-823
  // Rows of the q / acc / l / m blocks that can reach the output: the last
  // q block's rows past num_tokens are padding Pallas drops on write-back,
  // so they are not allocated (min(num_q_per_blk, num_tokens)).
  int64_t rows_alloc = 0;
  // get_dtype_packing of the KV dtype (kernel.py:678-680).
  int kv_packing = 1;
  int64_t words_per_token_blk = 0;  // num_combined_kv_heads_per_blk / kv_packing
  int64_t words_per_token = 0;      // num_combined_kv_heads / kv_packing
};

// Fills `g`; returns "" or a one-line reason the emulation cannot run
// (inconsistent head blocking, a zero block size, sizes beyond memory).
std::string make_geometry(const rpa_problem& p, const TiledConfig& cfg, Geometry& g);

}  // namespace rpa::tiled
