// Tests of the tiled emulation's schedule: get_next_prefetch_ids, and the grid walk's consumed KV blocks on random ragged batches.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <vector>

#include "kernels/tiled/tiled_prefetch.h"
#include "tiled_test_util.h"

namespace rpa::tiled {
namespace {

using testing::Problem;
using testing::SeqLen;
using testing::Spec;

// Expectations read off kernel.py:427-452 by hand.
TEST(TiledPrefetch, NextKvBlockOfTheSameSequence) {
  const PrefetchContext c{/*kv_len=*/100, /*q_end=*/10, /*q_len_end=*/8, /*num_kv_per_blk=*/16, /*num_seqs=*/3};
  const PrefetchIds n = next_prefetch_ids(c, 0, 1, 2, 0);
  EXPECT_EQ(n.block, (KvBlockId{0, 1, 3}));
  EXPECT_EQ(n.buf, 1);
}

TEST(TiledPrefetch, LastKvBlockOfASequenceEndingInTheQBlockGoesToTheNextSequence) {
  const PrefetchContext c{40, /*q_end=*/8, /*q_len_end=*/8, 16, 3};
  const PrefetchIds n = next_prefetch_ids(c, 1, 1, 2, 1);  // 3 * 16 >= 40
  EXPECT_EQ(n.block, (KvBlockId{1, 2, 0}));
  EXPECT_EQ(n.buf, 0);
}

TEST(TiledPrefetch, LastKvBlockOfASequenceContinuingPastTheQBlockRefetchesIt) {
  const PrefetchContext c{40, /*q_end=*/9, /*q_len_end=*/8, 16, 3};
  EXPECT_EQ(next_prefetch_ids(c, 0, 1, 2, 0).block, (KvBlockId{0, 1, 0}));
}

TEST(TiledPrefetch, PastTheLastSequenceGoesToSequenceZeroOfTheNextHeadBlock) {
  const PrefetchContext c{32, 8, 8, 16, 3};
  EXPECT_EQ(next_prefetch_ids(c, 0, 2, 1, 1).block, (KvBlockId{1, 0, 0}));  // 2 * 16 >= 32: last
  EXPECT_EQ(next_prefetch_ids(c, 0, 2, 0, 1).block, (KvBlockId{0, 2, 1}));  // 1 * 16 < 32
}

// The blocks the kernel must consume, derived from what the schedule is
// for rather than from its code: for each head block, each q block, each
// sequence whose q rows overlap the q block (in order), each of its
// cdiv(kv_len, num_kv_per_blk) KV blocks.
std::vector<KvBlockId> expected_blocks(const Problem& p, int64_t num_heads_blks, int64_t nq, int64_t nkv) {
  std::vector<KvBlockId> out;
  const int64_t total = p.cu_q_lens[size_t(p.num_seqs)];
  const int64_t q_blks = testing::cdiv(p.num_tokens, nq);
  for (int64_t h = 0; h < num_heads_blks; ++h)
    for (int64_t qb = 0; qb < q_blks; ++qb) {
      const int64_t a = qb * nq, b = a + nq;
      if (a >= total) continue;
      for (int64_t s = 0; s < p.num_seqs; ++s)
        if (p.cu_q_lens[size_t(s)] < b && p.cu_q_lens[size_t(s + 1)] > a)
          for (int64_t kv = 0; kv < testing::cdiv(p.kv_lens[size_t(s)], nkv); ++kv) out.push_back({h, s, kv});
    }
  return out;
}

// On every batch whose sequences all have queries (the kernel's intended
// input), the block prefetched into a buffer is the block consumed from it,
// no read goes out of bounds, no copy is left in flight, and the consumed
// blocks are exactly the expected ones.
RC_GTEST_PROP(TiledSchedule, PrefetchedBlockIsTheConsumedBlock, ()) {
  Spec s;
  const int64_t heads_blks = *rc::gen::inRange(1, 4);
  const int64_t kv_heads_per_blk = *rc::gen::inRange(1, 3);
  const int64_t ratio = *rc::gen::inRange(1, 3);
  s.num_kv_heads = heads_blks * kv_heads_per_blk;
  s.num_q_heads = s.num_kv_heads * ratio;
  s.head_dim = 1;
  s.page_size = *rc::gen::inRange(1, 5);
  const int n = *rc::gen::inRange(1, 6);
  for (int i = 0; i < n; ++i) {
    const int64_t q_len = *rc::gen::inRange(1, 10);
    s.seqs.push_back({q_len, q_len + *rc::gen::inRange(0, 30)});
  }
  s.extra_tokens = *rc::gen::inRange(0, 9);
  s.extra_seqs = *rc::gen::inRange(0, 2);
  s.extra_page_columns = *rc::gen::inRange(0, 3);
  Problem p = testing::make_problem(s, 1);
  p.num_kv_pages_per_block = *rc::gen::inRange<int64_t>(1, p.pages_per_seq + 1);
  p.num_queries_per_block = *rc::gen::inRange(1, 12);

  std::vector<KvBlockId> consumed;
  TiledConfig cfg;
  cfg.num_q_heads_per_blk = kv_heads_per_blk * ratio;
  cfg.num_combined_kv_heads_per_blk = 2 * kv_heads_per_blk;
  cfg.compute = false;
  cfg.on_consume = [&](const KvBlockId& id) { consumed.push_back(id); };
  Diagnostics diags;
  const rpa_problem view = p.view();
  const TiledResult r = tiled_attention(view, cfg, nullptr, diags);
  RC_ASSERT(r.code == RPA_OK);
  for (const auto& line : diags.lines()) RC_ASSERT(line.rfind("trace-assertion.", 0) == 0);
  RC_ASSERT(consumed == expected_blocks(p, heads_blks, p.num_queries_per_block, p.num_kv_pages_per_block * s.page_size));
}

// A sequence with no KV (kv_len 0, so also q_len 0: dynamic validation
// accepts it) between two others: its block is prefetched (get_next_prefetch_ids
// of the previous sequence) but never consumed, since its KV loop runs zero
// times; the next sequence then waits on that buffer and computes with the
// empty sequence's pages. A kernel bug the check must report.
TEST(TiledSchedule, EmptySequenceInTheMiddleLeavesItsPrefetchForTheNextOne) {
  Spec s;
  s.seqs = {{2, 5}, {0, 0}, {3, 6}};
  Problem p = testing::make_problem(s, 2);
  p.num_kv_pages_per_block = 1;
  p.num_queries_per_block = 8;
  const auto r = testing::run(p, s.num_q_heads, 2 * s.num_kv_heads, /*compute=*/false);
  EXPECT_TRUE(r.diags.has(DiagKind::kPrefetchMismatch));
}

// A trailing sequence with no queries that starts exactly at a q-block
// boundary: the previous sequence ends the q block with done = 1 and
// seq_idx pointing at it, the next q block does not run (q_len_start ==
// cu_q_lens[num_seqs]), and seq_idx < num_seqs is carried into the next head
// block, which then starts at that sequence instead of sequence 0
// (kernel.py:663-674). With two head blocks, the second consumes a block
// prefetched for the first and never stores its rows.
TEST(TiledSchedule, TrailingEmptySequenceAtABlockBoundaryDerailsTheNextHeadBlock) {
  Spec s;
  s.num_q_heads = 4;
  s.num_kv_heads = 2;
  s.seqs = {{4, 6}, {0, 3}};
  Problem p = testing::make_problem(s, 3);
  p.num_kv_pages_per_block = 2;
  p.num_queries_per_block = 4;
  const auto two = testing::run(p, 2, 2);  // two head blocks
  EXPECT_TRUE(two.diags.has(DiagKind::kPrefetchMismatch));
  EXPECT_TRUE(two.diags.has(DiagKind::kUnstoredRows));
  // One head block: the stray prefetch is only left in flight.
  const auto one = testing::run(p, 4, 4);
  EXPECT_TRUE(one.diags.has(DiagKind::kCopyNeverWaited));
  EXPECT_FALSE(one.diags.has(DiagKind::kPrefetchMismatch));
  EXPECT_FALSE(one.diags.has(DiagKind::kUnstoredRows));
}

}  // namespace
}  // namespace rpa::tiled
