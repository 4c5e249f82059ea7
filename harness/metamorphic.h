// Metamorphic transformations of a case whose effect on the attention output is known exactly (DESIGN.md properties).
#pragma once

#include <cstdint>
#include <vector>

#include "harness/case.h"

namespace rpa {

// Shuffles the physical pages and remaps page_indices: the output must not
// change at all.
Case permute_pages(const Case& c, uint64_t seed);

// Repeats every KV head `times` times (K and V alike, so combined heads grow
// by `times`) and keeps q: the GQA ratio drops by `times` and each q head
// still meets the same K/V values, so the output must not change. This is
// the seed's workaround for untileable head counts.
Case repeat_kv_heads(const Case& c, int times);

// The case reduced to sequence `s` alone (its q rows, its page-table row):
// the output must equal the batch output's rows of that sequence.
Case single_sequence(const Case& c, int64_t s);
// Rows [begin, end) of the batch output that belong to sequence s.
std::pair<int64_t, int64_t> sequence_rows(const Case& c, int64_t s);

// Replaces every value attention must not read (pages no valid sequence
// uses, slots past kv_len, q rows past cu_q_lens[num_seqs]) by `poison`
// (NaN where the dtype has it, else its largest magnitude): the valid
// output rows must not change.
Case poison_unread(const Case& c);

// Number of valid sequences (num_seqs, clamped to the table).
int64_t valid_sequences(const Case& c);

}  // namespace rpa
