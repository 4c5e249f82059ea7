// get_next_prefetch_ids (kernel.py:424-452): which KV block the kernel fetches ahead while it computes the current one.
#pragma once

#include <cstdint>

#include "kernels/tiled/tiled_config.h"

namespace rpa::tiled {

struct PrefetchIds {
  KvBlockId block;
  int64_t buf = 0;
};

// The scalars the kernel's closure sees for the current sequence.
struct PrefetchContext {
  int64_t kv_len = 0;          // kv_lens_ref[cur_seq_idx]
  int64_t q_end = 0;           // cu_q_lens_ref[cur_seq_idx + 1]
  int64_t q_len_end = 0;       // (q_blk_idx + 1) * num_q_per_blk
  int64_t num_kv_per_blk = 0;  // num_kv_pages_per_blk * page_size
  int64_t num_seqs = 0;
};

// Mirrors the selects of kernel.py:427-452 one for one: the next KV block of
// this sequence; else, at its last KV block, the next sequence if this one
// ends in the current q block (else this sequence again, KV block 0, for the
// next q block); past the last sequence, sequence 0 of the next head block.
// The buffer alternates.
PrefetchIds next_prefetch_ids(const PrefetchContext& c, int64_t heads_blk_idx, int64_t cur_seq_idx,
                              int64_t kv_blk_idx, int64_t cur_buf_idx);

}  // namespace rpa::tiled
