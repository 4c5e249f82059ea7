// Tests that the tiled emulation bounds-checks every table and page read, reports the reads the TPU kernel would make out of bounds, and never crashes.
#include <gtest/gtest.h>

#include "tiled_test_util.h"

namespace rpa::tiled {
namespace {

using testing::Problem;
using testing::Spec;

Problem small_problem(uint64_t seed) {
  Spec s;
  s.seqs = {{3, 9}, {2, 14}, {1, 5}};
  Problem p = testing::make_problem(s, seed);
  p.num_kv_pages_per_block = 2;
  p.num_queries_per_block = 4;
  return p;
}

// A page table whose width (here 4 pages) is not a multiple of
// num_kv_pages_per_block (3): the last KV block's descriptor names pages
// 3, 4, 5; the kernel clamps page_idx >= end_page_idx to 0 (kernel.py:53)
// with end_page_idx = min(pages_per_seq, cdiv(kv_len, page_size)), so no
// read leaves the table, and the table's unused columns (garbage here) are
// never read.
TEST(TiledBounds, PageTableWidthNotAMultipleOfTheKvBlockIsSafe) {
  Problem p = small_problem(1);
  ASSERT_EQ(p.pages_per_seq, 4);
  p.num_kv_pages_per_block = 3;
  const auto r = testing::run(p, p.spec.num_q_heads, 2 * p.spec.num_kv_heads);
  ASSERT_EQ(r.result.code, RPA_OK);
  for (DiagKind k : {DiagKind::kOobPageIndices, DiagKind::kOobKvPages, DiagKind::kOobKvLens, DiagKind::kOobCuQLens})
    EXPECT_FALSE(r.diags.has(k)) << diag_name(k);
  const testing::Truth t = testing::attention_f64(p);
  for (size_t i = 0; i < t.out.size(); ++i) EXPECT_NEAR(r.out[i], t.out[i], 1e-5) << i;
}

TEST(TiledBounds, PageIndexPastTheCacheIsReported) {
  Problem p = small_problem(2);
  p.page_indices[size_t(1 * p.pages_per_seq + 2)] = int32_t(p.total_num_pages + 5);  // inside seq 1's kv_len
  p.page_indices[size_t(0)] = -3;
  const auto r = testing::run(p, p.spec.num_q_heads, 2 * p.spec.num_kv_heads);
  EXPECT_EQ(r.result.code, RPA_OK);
  EXPECT_TRUE(r.diags.has(DiagKind::kOobKvPages));
  EXPECT_GE(r.diags.count(DiagKind::kOobKvPages), 2);
}

// num_seqs past the tables: is_cur_q_blk_needed reads cu_q_lens[num_seqs]
// (kernel.py:413).
TEST(TiledBounds, NumSeqsPastTheTablesIsReported) {
  Problem p = small_problem(3);
  p.num_seqs = int32_t(p.max_num_seqs + 2);
  const auto r = testing::run(p, p.spec.num_q_heads, 2 * p.spec.num_kv_heads);
  EXPECT_EQ(r.result.code, RPA_OK);
  EXPECT_TRUE(r.diags.has(DiagKind::kOobCuQLens));
}

// cu_q_lens claiming more rows than the sequences' tables: the sequence walk
// reads kv_lens / page_indices / cu_q_lens past their ends.
TEST(TiledBounds, GarbageIndexTablesNeverCrash) {
  for (uint64_t seed = 0; seed < 40; ++seed) {
    Problem p = small_problem(seed);
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<int32_t> any(-20, 40);
    for (auto& x : p.kv_lens) x = any(rng);
    for (auto& x : p.cu_q_lens) x = any(rng);
    for (auto& x : p.page_indices) x = any(rng);
    p.num_seqs = any(rng) % 6;
    const auto r = testing::run(p, p.spec.num_q_heads, 2 * p.spec.num_kv_heads);
    EXPECT_EQ(r.result.code, RPA_OK) << r.result.message;
  }
}

TEST(TiledBounds, HugeKvLenStopsAtTheWorkBudget) {
  Problem p = small_problem(4);
  p.kv_lens[0] = 2000000000;
  TiledConfig cfg;
  cfg.num_q_heads_per_blk = p.spec.num_q_heads;
  cfg.num_combined_kv_heads_per_blk = 2 * p.spec.num_kv_heads;
  cfg.max_multiply_adds = 1e6;
  std::vector<float> out(p.q.size());
  Diagnostics d;
  const rpa_problem view = p.view();
  EXPECT_EQ(tiled_attention(view, cfg, out.data(), d).code, RPA_ERR_UNSUPPORTED);
}

TEST(TiledBounds, InconsistentHeadBlockingIsRefused) {
  Problem p = small_problem(5);
  const auto r = testing::run(p, 3, 2 * p.spec.num_kv_heads);
  EXPECT_EQ(r.result.code, RPA_ERR_UNSUPPORTED);
  EXPECT_FALSE(r.result.message.empty());
}

}  // namespace
}  // namespace rpa::tiled
