// get_next_prefetch_ids, kernel.py:424-452.
#include "kernels/tiled/tiled_prefetch.h"

namespace rpa::tiled {

PrefetchIds next_prefetch_ids(const PrefetchContext& c, int64_t heads_blk_idx, int64_t cur_seq_idx,
                              int64_t kv_blk_idx, int64_t cur_buf_idx) {
  int64_t next_kv_blk_idx = kv_blk_idx + 1;
  const bool is_last_kv_blk = next_kv_blk_idx * c.num_kv_per_blk >= c.kv_len;
  next_kv_blk_idx = is_last_kv_blk ? 0 : next_kv_blk_idx;
  const bool is_cur_seq_end_in_cur_q_blk = c.q_end <= c.q_len_end;
  int64_t next_seq_idx = is_last_kv_blk ? (is_cur_seq_end_in_cur_q_blk ? cur_seq_idx + 1 : cur_seq_idx) : cur_seq_idx;
  const bool is_last_seq = next_seq_idx == c.num_seqs;
  next_seq_idx = is_last_seq ? 0 : next_seq_idx;
  const int64_t next_heads_blk_idx = is_last_seq ? heads_blk_idx + 1 : heads_blk_idx;
  const int64_t next_buf_idx = cur_buf_idx == 0 ? 1 : 0;
  return {{next_heads_blk_idx, next_seq_idx, next_kv_blk_idx}, next_buf_idx};
}

}  // namespace rpa::tiled
