// Seeded generator of valid attention cases (mixed prefill/decode batches over random page layouts).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "harness/case.h"

namespace rpa {

struct GenOptions {
  // The preset's name (gen_shapes): random_case's ids are "gen-<seed>" for
  // "small", "gen-<name>-<seed>" otherwise, so a reproducer says which.
  std::string name = "small";
  int max_seqs = 4;
  int max_q_len = 12;
  int max_kv_len = 48;
  int max_head_dim = 16;         // head_dim drawn from 1 .. this, unless head_dims is given
  // head_dim drawn from these instead: the fast kernel's decode items and
  // register blocks take head_dim a multiple of 16 or 64 (docs/fast_kernel.md),
  // which a draw from 1 .. max_head_dim rarely gives.
  std::vector<int64_t> head_dims;
  bool tileable_heads = true;    // only head counts get_min_heads_per_blk accepts
  bool random_options = true;    // sliding window, soft cap, scales, mask value
  bool random_dtypes = true;     // else q float32, kv float32
  bool poison_padding = true;    // NaN in unused pages, past kv_len, past num_seqs
};

// Named shape presets of `rpa conform --shapes`: "small" (the defaults
// above: every head_dim from 1 to 16, a few short sequences; fast enough
// for thousands of cases a minute) and "large" (head_dims the fast
// kernel's vector paths take, up to 256, and longer sequences: the code
// that upstream shapes run). Throws std::invalid_argument on another name.
GenOptions gen_shapes(std::string_view name);
const std::vector<std::string>& gen_shape_names();

// The same seed gives the same case on every machine (std::mt19937_64 and
// integer arithmetic only; tensor contents via data_seed).
Case random_case(uint64_t seed, const GenOptions& options = {});

// The same generator with its choices read from `data` (libFuzzer's
// input): each choice takes the next bytes it needs, and 0 once they run
// out. Id "fuzz-<hash of the bytes>".
Case random_case_from_bytes(const uint8_t* data, size_t size, const GenOptions& options = {});

}  // namespace rpa
