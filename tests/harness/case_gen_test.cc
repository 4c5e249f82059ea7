// Tests of the byte-driven case generator (random_case_from_bytes): what the fuzz target kernel_diff runs on.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <vector>

#include "harness/case.h"
#include "harness/case_gen.h"
#include "harness/conform.h"
#include "harness/impls.h"

namespace rpa {
namespace {

GenOptions small() {
  GenOptions g;
  g.max_seqs = 3;
  g.max_q_len = 6;
  g.max_kv_len = 24;
  g.max_head_dim = 8;
  return g;
}

Case from(const std::vector<uint8_t>& bytes) { return random_case_from_bytes(bytes.data(), bytes.size(), small()); }

TEST(CaseGen, TheSameBytesGiveTheSameCase) {
  const std::vector<uint8_t> bytes = {7, 200, 3, 91, 14, 255, 0, 42, 9, 9, 130, 61};
  EXPECT_EQ(write_case(from(bytes)), write_case(from(bytes)));
  std::vector<uint8_t> other = bytes;
  other.back() ^= 1;
  EXPECT_NE(from(bytes).id, from(other).id);
}

// The first choice is q's dtype among float32, bfloat16, float16, read
// from one byte: a one-byte mutation moves one decision, not the case.
TEST(CaseGen, TheFirstByteChoosesQsDtype) {
  EXPECT_EQ(from({0}).call.q.dtype, DType::kFloat32);
  EXPECT_EQ(from({1}).call.q.dtype, DType::kBFloat16);
  EXPECT_EQ(from({2}).call.q.dtype, DType::kFloat16);
  EXPECT_EQ(from({3}).call.q.dtype, DType::kFloat32);
  // The rest of the choices, all 0, are the same.
  Case a = from({0}), b = from({1});
  EXPECT_EQ(a.call.kv_pages.shape, b.call.kv_pages.shape);
  EXPECT_EQ(a.call.kv_lens.data, b.call.kv_lens.data);
}

// Choices past the input's end read 0: the empty input is one sequence
// with the smallest lengths, and the truth accepts it.
TEST(CaseGen, TheEmptyInputIsASmallValidCase) {
  const Case c = from({});
  EXPECT_EQ(c.call.num_seqs.data, std::vector<int64_t>{1});
  EXPECT_EQ(c.call.q.dtype, DType::kFloat32);
  EXPECT_NO_THROW(compute_truths(c, 1));
}

// What the fuzz target checks, as a property over arbitrary inputs: every
// input is a case the truth accepts, and each in-tree implementation
// passes it or shows a known upstream-kernel behaviour.
RC_GTEST_PROP(CaseGen, EveryInputIsACaseTheImplementationsPass, (const std::vector<uint8_t>& bytes)) {
  static const std::vector<const ImplSpec*> impls = {find_implementation("oracle"), find_implementation("tiled"),
                                                     find_implementation("fast")};
  ImplOptions options;
  options.threads = 1;
  const Case c = from(bytes);
  const auto verdicts = conform_case(c, impls, options);
  RC_ASSERT(verdicts.has_value());
  for (size_t i = 0; i < impls.size(); ++i) {
    const Verdict& v = (*verdicts)[i];
    if (!v.ok && !v.kernel_finding) RC_FAIL(impls[i]->name + " on " + c.id + ": " + v.detail);
  }
}

}  // namespace
}  // namespace rpa
