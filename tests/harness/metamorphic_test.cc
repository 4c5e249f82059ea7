// Metamorphic properties of every registered implementation: page permutation, poisoning, GQA repeat, batch split.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <bit>
#include <cmath>
#include <string>

#include "harness/case_gen.h"
#include "harness/conform.h"
#include "harness/impls.h"
#include "harness/metamorphic.h"
#include "oracle/py_error.h"

namespace rpa {
namespace {

GenOptions small() {
  GenOptions o;
  o.max_seqs = 3;
  o.max_q_len = 6;
  o.max_kv_len = 24;
  o.max_head_dim = 8;
  o.poison_padding = false;  // the properties add their own poison
  return o;
}

bool same_bits(float a, float b) { return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b) || (std::isnan(a) && std::isnan(b)); }

// Rows [row0, row0 + rows) of a equal rows [row1, ...) of b, bit for bit.
void assert_rows_equal(const ImplOutput& a, int64_t row0, const ImplOutput& b, int64_t row1, int64_t rows) {
  const int64_t w = a.num_q_heads * a.head_dim;
  RC_ASSERT(w == b.num_q_heads * b.head_dim);
  for (int64_t i = 0; i < rows * w; ++i) {
    const float x = a.values[size_t(row0 * w + i)], y = b.values[size_t(row1 * w + i)];
    if (!same_bits(x, y)) RC_FAIL("element " + std::to_string(i) + ": " + std::to_string(x) + " vs " + std::to_string(y));
  }
}

// Runs the implementation, discarding the case when it rejects it (a head
// count or block size the kernel entry does not accept).
ImplOutput run_or_discard(const ImplSpec& impl, const Case& c) {
  ImplOutput out;
  try {
    out = impl.run(c, ImplOptions{});
  } catch (const PyError& e) {
    RC_DISCARD(e.what());
  }
  // The tiled emulation reproduces schedule bugs of the upstream kernel
  // (docs/tiled.md); such a case says nothing about the property.
  RC_PRE(!names_kernel_finding(out.diagnostics));
  return out;
}

// Storage-only changes (page order, poison in unread values) must leave
// every implementation's output bit for bit the same. Changes of the
// computation's shape (heads repeated, a sequence alone) keep the math the
// same, so the reference, which computes each (sequence, head) on its own,
// must give the same bits; a kernel may group the work differently, so its
// output on the transformed case is judged against the original case's
// truth with the same bound as its output on the original.
void assert_same_attention(const std::string& impl, const Case& original, const ImplOutput& a, int64_t row0,
                           const ImplOutput& b, int64_t rows) {
  if (impl == "oracle") return assert_rows_equal(a, row0, b, 0, rows);
  const Truths truths = compute_truths(original, 1);
  ImplOutput slice = a;
  const int64_t w = a.num_q_heads * a.head_dim;
  std::copy_n(b.values.begin(), rows * w, slice.values.begin() + row0 * w);
  const Verdict v = judge(original, impl, slice, truths);
  if (!v.ok) RC_FAIL(v.detail);
}

class Metamorphic : public ::testing::TestWithParam<std::string> {};

TEST_P(Metamorphic, PagePermutationChangesNothing) {
  const ImplSpec* impl = find_implementation(GetParam());
  if (!impl) GTEST_SKIP() << GetParam() << " not registered";
  EXPECT_TRUE(rc::check("permuting physical pages", [&](uint64_t seed) {
    const Case c = random_case(seed, small());
    const ImplOutput a = run_or_discard(*impl, c), b = run_or_discard(*impl, permute_pages(c, seed ^ 0x5eed));
    RC_ASSERT(a.rows == b.rows);
    assert_rows_equal(a, 0, b, 0, a.rows);
  }));
}

TEST_P(Metamorphic, PoisonInUnreadValuesDoesNotLeak) {
  const ImplSpec* impl = find_implementation(GetParam());
  if (!impl) GTEST_SKIP() << GetParam() << " not registered";
  EXPECT_TRUE(rc::check("NaN in unused pages, past kv_len, past cu_q_lens[num_seqs]", [&](uint64_t seed) {
    const Case c = random_case(seed, small());
    const ImplOutput a = run_or_discard(*impl, c), b = run_or_discard(*impl, poison_unread(c));
    RC_ASSERT(a.rows == b.rows);
    assert_rows_equal(a, 0, b, 0, a.rows);
  }));
}

TEST_P(Metamorphic, SequenceAloneEqualsItsRowsInTheBatch) {
  const ImplSpec* impl = find_implementation(GetParam());
  if (!impl) GTEST_SKIP() << GetParam() << " not registered";
  EXPECT_TRUE(rc::check("batch split", [&](uint64_t seed) {
    const Case c = random_case(seed, small());
    const ImplOutput batch = run_or_discard(*impl, c);
    const int64_t s = int64_t(seed % uint64_t(valid_sequences(c)));
    const auto [begin, end] = sequence_rows(c, s);
    const ImplOutput alone = run_or_discard(*impl, single_sequence(c, s));
    assert_same_attention(GetParam(), c, batch, begin, alone, end - begin);
  }));
}

TEST_P(Metamorphic, RepeatingKvHeadsIsTheSameAttention) {
  const ImplSpec* impl = find_implementation(GetParam());
  if (!impl) GTEST_SKIP() << GetParam() << " not registered";
  EXPECT_TRUE(rc::check("GQA repeat (the seed's workaround)", [&](uint64_t seed) {
    const Case c = random_case(seed, small());
    const int64_t ratio = c.call.q.shape[1] / (c.call.kv_pages.shape[2] / 2);
    RC_PRE(ratio % 2 == 0);
    const ImplOutput a = run_or_discard(*impl, c), b = run_or_discard(*impl, repeat_kv_heads(c, 2));
    RC_ASSERT(a.rows == b.rows);
    assert_same_attention(GetParam(), c, a, 0, b, a.rows);
  }));
}

INSTANTIATE_TEST_SUITE_P(Impls, Metamorphic, ::testing::Values("oracle", "tiled", "fast"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace rpa
