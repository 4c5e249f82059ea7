// Tests of make_problem without the float pages (a kernel that reads its own encoding of them).
#include "harness/problem.h"

#include <gtest/gtest.h>

#include "harness/upstream_cases.h"

namespace rpa {
namespace {

TEST(Problem, WithoutKvPagesEverythingElseIsTheSame) {
  const Case c = upstream_case("p", scaled_seq_lens(upstream_seq_lens("mixed"), 16), 4, 2, 16, 4, DType::kBFloat16,
                               DType::kFloat8E4M3FN);
  ProblemBuffers full, lean;
  make_problem(c, full);
  make_problem(c, lean, /*with_kv_pages=*/false);
  EXPECT_EQ(lean.problem.kv_pages, nullptr);
  EXPECT_TRUE(lean.kv_pages.empty());
  ASSERT_NE(full.problem.kv_pages, nullptr);
  EXPECT_EQ(full.kv_pages.size(), c.kv_content.values.size());
  const rpa_problem &a = full.problem, &b = lean.problem;
  EXPECT_EQ(a.num_tokens, b.num_tokens);
  EXPECT_EQ(a.total_num_pages, b.total_num_pages);
  EXPECT_EQ(a.page_size, b.page_size);
  EXPECT_EQ(a.num_combined_kv_heads, b.num_combined_kv_heads);
  EXPECT_EQ(a.num_seqs, b.num_seqs);
  EXPECT_EQ(a.kv_dtype, b.kv_dtype);
  EXPECT_EQ(full.q, lean.q);
  EXPECT_EQ(full.page_indices, lean.page_indices);
  EXPECT_EQ(full.kv_lens, lean.kv_lens);
  EXPECT_EQ(full.cu_q_lens, lean.cu_q_lens);
}

}  // namespace
}  // namespace rpa
