// Tests of the byte-driven case generator (random_case_from_bytes): what the fuzz target kernel_diff runs on.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "harness/case.h"
#include "harness/case_gen.h"
#include "harness/conform.h"
#include "harness/kernel_diff.h"

namespace rpa {
namespace {

// The fuzz target's cases (kernel_diff_shapes).
Case from(const std::vector<uint8_t>& bytes) { return kernel_diff_case(bytes.data(), bytes.size()); }

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
// with the smallest lengths and no options, and the truth accepts it.
TEST(CaseGen, TheEmptyInputIsASmallValidCase) {
  const Case c = from({});
  EXPECT_EQ(c.call.num_seqs.data, std::vector<int64_t>{1});
  EXPECT_EQ(c.call.q.dtype, DType::kFloat32);
  EXPECT_TRUE(c.call.sliding_window.is_none());
  EXPECT_TRUE(c.call.soft_cap.is_none());
  EXPECT_TRUE(c.call.k_scale.is_none());
  EXPECT_TRUE(c.call.v_scale.is_none());
  EXPECT_TRUE(c.call.mask_value.is_none());
  EXPECT_NO_THROW(compute_truths(c, 1));
}

// What the fuzz target checks, as a property over arbitrary inputs: every
// input is a case the truth accepts, and each in-tree implementation
// passes it or shows a known upstream-kernel behaviour.
RC_GTEST_PROP(CaseGen, EveryInputIsACaseTheImplementationsPass, (const std::vector<uint8_t>& bytes)) {
  const Case c = from(bytes);
  try {
    compute_truths(c, 1);
  } catch (const std::exception& e) {
    RC_FAIL(c.id + " rejected by the truth: " + e.what());
  }
  if (const auto failure = kernel_diff_failure(c)) RC_FAIL(failure->impl + " on " + c.id + ": " + failure->detail);
}

// The fuzz target's corpus (libFuzzer inputs, coverage-minimised; a
// finding's input is added here once fixed) replayed without libFuzzer.
TEST(CaseGen, KernelDiffCorpusPasses) {
  const std::filesystem::path dir = std::filesystem::path(RPA_SOURCE_DIR) / "corpus" / "fuzz" / "kernel_diff";
  ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir;
  int inputs = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(entry.path(), std::ios::binary);
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const Case c = from(bytes);
    const auto failure = kernel_diff_failure(c);
    EXPECT_FALSE(failure) << entry.path().filename() << ": " << failure->impl << ": " << failure->detail;
    ++inputs;
  }
  EXPECT_GT(inputs, 0);
}

}  // namespace
}  // namespace rpa
