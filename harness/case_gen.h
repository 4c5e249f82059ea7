// Seeded generator of valid attention cases (mixed prefill/decode batches over random page layouts).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "harness/case.h"

namespace rpa {

struct GenOptions {
  int max_seqs = 4;
  int max_q_len = 12;
  int max_kv_len = 48;
  int max_head_dim = 16;         // multiples of 4 up to this
  bool tileable_heads = true;    // only head counts get_min_heads_per_blk accepts
  bool random_options = true;    // sliding window, soft cap, scales, mask value
  bool random_dtypes = true;     // else q float32, kv float32
  bool poison_padding = true;    // NaN in unused pages, past kv_len, past num_seqs
};

// The same seed gives the same case on every machine (std::mt19937_64 and
// integer arithmetic only; tensor contents via data_seed).
Case random_case(uint64_t seed, const GenOptions& options = {});

// The same generator with its choices read from `data` (libFuzzer's
// input): each choice takes the next bytes it needs, and 0 once they run
// out. Id "fuzz-<hash of the bytes>".
Case random_case_from_bytes(const uint8_t* data, size_t size, const GenOptions& options = {});

}  // namespace rpa
