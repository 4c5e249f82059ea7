// The upstream test file's configurations (tests/pallas/tpu_ragged_paged_attention_test.py at cec06d116c) as cases.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "harness/case.h"

namespace rpa {

// (q_len, kv_len) of each sequence.
using SeqLens = std::vector<std::pair<int64_t, int64_t>>;

struct UpstreamOptions {
  int64_t num_pages = 1000;
  int64_t max_num_batched_tokens = 512;
  int64_t max_num_seq = 8;
  PyValue sliding_window, soft_cap, k_scale, v_scale;
  uint64_t seed = 1234;  // contents: harness/data_seed.h, one seed for q and one for the pages
  // The pages' contents, where an earlier case drew them with the same
  // kv_lens, geometry, KV dtype and seed (the upstream decode, prefill and
  // mixed tests share kv_lens): drawing them takes about 2 s for 1000
  // pages of 16 x 16 x 128. Only their number is checked.
  const std::vector<float>* kv_values = nullptr;
};

// The inputs _test_ragged_paged_attention builds (test file lines 36-128):
// q of [max(cu_q_lens[-1], max_num_batched_tokens), Hq, D]; each sequence's
// KV on consecutive pages, the tail of its last page and every page past
// the used ones NaN (the largest magnitude for integer dtypes, which have
// no NaN); page_indices rows padded with NaN cast to int32 (here INT32_MIN,
// never read); kv_lens and cu_q_lens padded with 0 up to max_num_seq
// sequences; num_seqs = len(seq_lens). Contents are uniform seeded values
// (jax.random.normal cannot be reproduced here); entry "reference".
Case upstream_case(const std::string& id, const SeqLens& seq_lens, int64_t num_q_heads, int64_t num_kv_heads,
                   int64_t head_dim, int64_t page_size, DType q_dtype, DType kv_dtype,
                   const UpstreamOptions& options = {});

// The sequence lengths of the named upstream tests: "basic" (also the
// quantized-KV test), "decode_only", "prefill_only", "mixed"
// (test_ragged_paged_attention_<name>). The "complex", "sliding_window" and
// "logit_soft_capping" tests draw q_len in [1, 100) and kv_len = q_len + [0,
// 50) with numpy's default_rng(1234); random_seq_lens draws in the same
// ranges with our own generator.
SeqLens upstream_seq_lens(std::string_view name);
SeqLens random_seq_lens(int64_t num_seqs, uint64_t seed);

// Every length divided by `divisor` (at least 1 each, q_len <= kv_len kept),
// for tests that mirror a configuration at a smaller size.
SeqLens scaled_seq_lens(const SeqLens& lens, int64_t divisor);

}  // namespace rpa
