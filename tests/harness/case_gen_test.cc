// Tests of the byte-driven case generator (random_case_from_bytes): what the fuzz target kernel_diff runs on.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <stdexcept>
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

// A fuzz target's corpus (libFuzzer inputs, coverage-minimised; a
// finding's input is added here once fixed) replayed without libFuzzer.
void expect_corpus_passes(const char* target, Case (*make)(const uint8_t*, size_t)) {
  const std::filesystem::path dir = std::filesystem::path(RPA_SOURCE_DIR) / "corpus" / "fuzz" / target;
  ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir;
  int inputs = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(entry.path(), std::ios::binary);
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const Case c = make(bytes.data(), bytes.size());
    const auto failure = kernel_diff_failure(c);
    EXPECT_FALSE(failure) << entry.path().filename() << ": " << failure->impl << ": " << failure->detail;
    ++inputs;
  }
  EXPECT_GT(inputs, 0);
}

TEST(CaseGen, KernelDiffCorpusPasses) { expect_corpus_passes("kernel_diff", kernel_diff_case); }
TEST(CaseGen, KernelDiffLargeCorpusPasses) { expect_corpus_passes("kernel_diff_large", kernel_diff_large_case); }

// kernel_diff_large reads the same choices into head_dims 32 to 136: the
// input that is one sequence of the smallest lengths in kernel_diff is one
// here too, with head_dim 64 (the list's first), and every head_dim of the
// list comes from some first choices.
TEST(CaseGen, KernelDiffLargeDrawsItsHeadDimsFromTheSameChoices) {
  const std::vector<uint8_t> none;
  const Case small = kernel_diff_case(none.data(), 0), large = kernel_diff_large_case(none.data(), 0);
  EXPECT_EQ(large.call.q.shape[2], 64);
  EXPECT_EQ(large.call.num_seqs.data, small.call.num_seqs.data);
  EXPECT_EQ(large.call.kv_lens.data, small.call.kv_lens.data);
  std::set<int64_t> seen;
  for (int b = 0; b < 256; ++b) {
    // q dtype, KV dtype, KV heads, group ratio, then head_dim: one byte each.
    const std::vector<uint8_t> bytes = {0, 0, 0, 0, uint8_t(b)};
    seen.insert(kernel_diff_large_case(bytes.data(), bytes.size()).call.q.shape[2]);
  }
  const auto want = kernel_diff_large_shapes().head_dims;
  EXPECT_EQ(seen, std::set<int64_t>(want.begin(), want.end()));
}

// `rpa conform --shapes`: "small" is the generator's defaults, seed for
// seed; other presets name their cases apart, and an unknown name throws.
TEST(CaseGen, ShapePresetsKeepSmallAsTheDefaultsAndNameTheOthers) {
  EXPECT_EQ(write_case(random_case(42, gen_shapes("small"))), write_case(random_case(42)));
  EXPECT_EQ(random_case(42).id, "gen-42");
  EXPECT_EQ(random_case(42, gen_shapes("large")).id, "gen-large-42");
  EXPECT_THROW(gen_shapes("huge"), std::invalid_argument);
  for (const auto& name : gen_shape_names()) EXPECT_NO_THROW(gen_shapes(name));
}

// The large preset exists to reach the fast kernel's vector paths, which
// small head_dims never do: the AVX-512 decode item takes head_dim % 64 == 0
// with bfloat16 or 8-bit float KV without scales and at most 8 rows per KV
// head (docs/fast_kernel.md, bf16_group-inl.h's Bf16GroupApplies and
// Bf16GroupTakes); the AVX2 item and the tiles' full vectors head_dim % 16
// == 0. Over 300 seeds each listed head_dim comes up, and so do those cases.
TEST(CaseGen, LargeShapesReachTheFastKernelsVectorPaths) {
  const GenOptions o = gen_shapes("large");
  std::set<int64_t> seen;
  int bf16_item = 0, mult16_decode = 0, tail = 0;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    const Case c = random_case(seed, o);
    const CallArgs& a = c.call;
    const int64_t d = a.q.shape[2];
    ASSERT_NE(std::find(o.head_dims.begin(), o.head_dims.end(), d), o.head_dims.end()) << c.id << ": head_dim " << d;
    seen.insert(d);
    const int64_t group = a.q.shape[1] / (a.kv_pages.shape[2] / 2);
    bool decode_row = false;
    for (int64_t s = 0; s < a.num_seqs.data[0]; ++s) {
      const int64_t q_len = a.cu_q_lens.data[size_t(s) + 1] - a.cu_q_lens.data[size_t(s)];
      decode_row = decode_row || (q_len >= 1 && q_len * group <= 8);
    }
    const DType kv = a.kv_pages.dtype;
    const bool kv16or8 = kv == DType::kBFloat16 || kv == DType::kFloat8E4M3FN || kv == DType::kFloat8E5M2;
    if (d % 64 == 0 && kv16or8 && a.k_scale.is_none() && a.v_scale.is_none() && decode_row) ++bf16_item;
    if (d % 16 == 0 && decode_row) ++mult16_decode;
    if (d % 16 != 0) ++tail;
  }
  EXPECT_EQ(seen.size(), o.head_dims.size());
  EXPECT_GE(bf16_item, 5);
  EXPECT_GE(mult16_decode, 100);
  EXPECT_GE(tail, 10);
}

// A few large cases through the oracle, tiled and fast, judged as `rpa
// conform` judges them: the vector paths against the exact truth.
TEST(CaseGen, LargeShapeCasesPassTheImplementations) {
  const GenOptions o = gen_shapes("large");
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    const Case c = random_case(seed, o);
    const auto failure = kernel_diff_failure(c);
    EXPECT_FALSE(failure) << c.id << ": " << failure->impl << ": " << failure->detail;
  }
}

}  // namespace
}  // namespace rpa
