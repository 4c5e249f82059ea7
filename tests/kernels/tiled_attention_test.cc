// Tests of the tiled emulation's numbers against an independent float64 attention, block-size invariance and documented behaviours.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <string>
#include <vector>

#include "tiled_test_util.h"

namespace rpa::tiled {
namespace {

using testing::Problem;
using testing::SeqLen;
using testing::Spec;

const std::vector<SeqLen> kMixed = {{5, 9}, {1, 7}, {6, 6}, {3, 13}, {1, 1}};

// Every valid output element within the bound of the float64 truth;
// returns the largest error as a fraction of its bound.
double expect_within_bound(const Problem& p, const std::vector<float>& out, const testing::Truth& t) {
  const double u = testing::path_unit_roundoff(p.spec);
  const double abs_slack = 1e-5 * (1.0 + t.max_abs_out);
  double worst = 0;
  int reported = 0;
  for (size_t i = 0; i < t.out.size(); ++i) {
    const double bound = 2 * u * (t.max_abs_v[i] + std::fabs(t.out[i])) + abs_slack;
    const double err = std::fabs(double(out[i]) - t.out[i]);
    if (!(err <= bound) && reported++ < 5)
      ADD_FAILURE() << "element " << i << ": tiled " << out[i] << " truth " << t.out[i] << " err " << err << " bound " << bound;
    worst = std::max(worst, err / bound);
  }
  return worst;
}

struct DtypeCase {
  DType q, kv;
  bool scales;
  float sm_scale;
};

class TiledVsFloat64 : public ::testing::TestWithParam<DtypeCase> {};

TEST_P(TiledVsFloat64, MixedBatchWithinBound) {
  const DtypeCase dc = GetParam();
  Spec s;
  s.q_dtype = dc.q;
  s.kv_dtype = dc.kv;
  // Enough combined heads for the KV packing (strided_load_kv, kernel.py:366).
  s.num_kv_heads = std::max(2, 32 / dtype_bits(dc.kv) / 2 * 2);
  s.num_q_heads = 2 * s.num_kv_heads;
  s.seqs = kMixed;
  s.extra_tokens = 3;
  s.extra_seqs = 1;
  s.sm_scale = dc.sm_scale;
  if (dc.scales) s.has_k_scale = s.has_v_scale = true, s.k_scale = 0.0377f, s.v_scale = 0.071f;
  Problem p = testing::make_problem(s, 42 + uint64_t(dc.q) * 16 + uint64_t(dc.kv));
  p.num_kv_pages_per_block = 2;
  p.num_queries_per_block = 4;
  const auto r = testing::run(p, s.num_q_heads, 2 * s.num_kv_heads);
  ASSERT_EQ(r.result.code, RPA_OK) << r.result.message;
  expect_within_bound(p, r.out, testing::attention_f64(p));
  EXPECT_EQ(r.diags.has(DiagKind::kTraceAssertQDtype), dc.q != DType::kFloat32 && dc.q != DType::kBFloat16);
  EXPECT_TRUE(r.diags.has(DiagKind::kTraceAssertHeadDim));  // head_dim 8
  EXPECT_FALSE(r.diags.has(DiagKind::kMaskValueOverPadding));
  for (const auto& line : r.diags.lines()) EXPECT_EQ(line.rfind("trace-assertion.", 0), 0u) << line;
}

INSTANTIATE_TEST_SUITE_P(
    Dtypes, TiledVsFloat64,
    ::testing::Values(DtypeCase{DType::kFloat32, DType::kFloat32, false, 0.35f},
                      DtypeCase{DType::kBFloat16, DType::kBFloat16, false, 0.35f},
                      DtypeCase{DType::kFloat32, DType::kBFloat16, false, 1.0f},
                      DtypeCase{DType::kBFloat16, DType::kFloat8E4M3FN, false, 0.35f},
                      DtypeCase{DType::kBFloat16, DType::kFloat8E5M2, true, 1.0f},
                      DtypeCase{DType::kFloat32, DType::kFloat8E4M3FN, true, 1.0f},
                      DtypeCase{DType::kFloat32, DType::kInt8, true, 1.0f},
                      DtypeCase{DType::kFloat32, DType::kInt8, false, 0.002f},
                      DtypeCase{DType::kBFloat16, DType::kInt4, true, 1.0f},
                      DtypeCase{DType::kFloat16, DType::kFloat16, false, 0.35f}),
    [](const auto& info) {
      return std::string(dtype_name(info.param.q)) + "_" + std::string(dtype_name(info.param.kv)) +
             (info.param.scales ? "_scaled" : "");
    });

// Dequantisation is k.astype(f32) * k_scale, then astype(q dtype)
// (kernel.py:630-637). Exact expectations from two-key cases whose
// arithmetic is short enough to write out: with q = 0 both keys score 0, so
// out = ((v1' + v2') / 2).astype(q dtype), v' = (v * v_scale).astype(q dtype);
// with q = e_0 and V = (1, 0), out = p1 / (p1 + p2), p1 = exp(s1 - m),
// p2 = exp(-m), m = max(s1, 0), s1 = k1' (sm_scale 1).
TEST(TiledAttention, DequantisedKvIsRoundedToTheQDtype) {
  for (DType qd : {DType::kBFloat16, DType::kFloat16}) {
    SCOPED_TRACE(std::string(dtype_name(qd)));
    Spec s;
    s.q_dtype = qd;
    s.kv_dtype = DType::kFloat8E4M3FN;
    s.num_kv_heads = 2;
    s.num_q_heads = 2;
    s.head_dim = 16;
    s.seqs = {{1, 2}};
    s.value_range = 400.0f;
    s.has_k_scale = s.has_v_scale = true;
    s.k_scale = 0.0137f;
    s.v_scale = 0.0291f;
    Problem p = testing::make_problem(s, 29);
    p.num_kv_pages_per_block = 1;
    p.num_queries_per_block = 1;
    const int64_t page = p.page_indices[0], d = s.head_dim;
    // V path: q = 0.
    std::fill(p.q.begin(), p.q.end(), 0.0f);
    auto r = testing::run(p, 2, 4);
    int v_mismatches_if_unrounded = 0;
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t c = 0; c < d; ++c) {
        const float u1 = p.v_at(page, 0, h, c) * s.v_scale, u2 = p.v_at(page, 1, h, c) * s.v_scale;
        const float v1 = round_to(qd, u1), v2 = round_to(qd, u2);
        const float want = round_to(qd, float(double(v1) + double(v2)) / 2.0f);
        v_mismatches_if_unrounded += round_to(qd, float(double(u1) + double(u2)) / 2.0f) != want;
        ASSERT_EQ(std::bit_cast<uint32_t>(r.out[size_t(h * d + c)]), std::bit_cast<uint32_t>(want)) << h << " " << c;
      }
    EXPECT_GT(v_mismatches_if_unrounded, 0);
    // K path: q = e_0, V = (1, 0) unscaled, K of key 2 = 0.
    p.spec.has_v_scale = false;
    for (int64_t h = 0; h < 2; ++h) {
      p.q[size_t(h * d)] = 1.0f;
      for (int64_t c = 0; c < d; ++c) {
        p.kv[p.kv_index(page, 0, 2 * h + 1, c)] = 1.0f;
        p.kv[p.kv_index(page, 1, 2 * h + 1, c)] = 0.0f;
        p.kv[p.kv_index(page, 1, 2 * h, c)] = 0.0f;
      }
    }
    int mismatches_if_unrounded = 0;
    for (int64_t h = 0; h < 2; ++h) p.kv[p.kv_index(page, 0, 2 * h, 0)] = h ? 112.0f : 96.0f;
    for (int trial = 0; trial < 64; ++trial) {
      p.spec.k_scale = 0.009f + 0.00017f * float(trial);  // s1 from about 0.9 to 2.2
      r = testing::run(p, 2, 4);
      for (int64_t h = 0; h < 2; ++h) {
        auto expect = [&](float s1) {
          const float m = std::max(s1, 0.0f), p1 = std::exp(s1 - m), p2 = std::exp(0.0f - m);
          return round_to(qd, p1 / float(double(p1) + double(p2)));
        };
        const float k1 = p.kv[p.kv_index(page, 0, 2 * h, 0)] * p.spec.k_scale;
        const float want = expect(round_to(qd, k1));
        mismatches_if_unrounded += expect(k1) != want;
        for (int64_t c = 0; c < d; ++c)
          ASSERT_EQ(std::bit_cast<uint32_t>(r.out[size_t(h * d + c)]), std::bit_cast<uint32_t>(want)) << trial << " " << h;
      }
    }
    EXPECT_GT(mismatches_if_unrounded, 0);  // the case can tell the rounding apart
  }
}

TEST(TiledAttention, SlidingWindowAndSoftCap) {
  Spec s;
  s.seqs = {{7, 15}, {2, 11}, {9, 9}};
  s.has_sliding_window = true;
  s.sliding_window = 4;
  s.has_soft_cap = true;
  s.soft_cap = 1.5f;
  s.value_range = 2.0f;
  Problem p = testing::make_problem(s, 5);
  p.num_kv_pages_per_block = 1;
  p.num_queries_per_block = 3;
  const auto r = testing::run(p, s.num_q_heads, 2 * s.num_kv_heads);
  ASSERT_EQ(r.result.code, RPA_OK);
  expect_within_bound(p, r.out, testing::attention_f64(p));
}

// head_dim 128 and q float32 / bfloat16: no trace-time assertion applies,
// and valid input gives no diagnostic at all.
TEST(TiledAttention, HeadDim128HasNoDiagnostics) {
  Spec s;
  s.head_dim = 128;
  s.num_q_heads = 2;
  s.num_kv_heads = 1;
  s.seqs = {{3, 10}, {1, 4}};
  s.sm_scale = 0.088f;
  Problem p = testing::make_problem(s, 6);
  p.num_kv_pages_per_block = 2;
  p.num_queries_per_block = 2;
  const auto r = testing::run(p, 2, 2);
  ASSERT_EQ(r.result.code, RPA_OK);
  EXPECT_TRUE(r.diags.empty()) << r.diags.lines()[0];
  expect_within_bound(p, r.out, testing::attention_f64(p));
}

// Per output row the arithmetic does not depend on the q blocking or the
// head blocking (rows and heads are independent), so those give bit-equal
// results; the KV blocking regroups the online softmax, so it changes
// rounding only, and every blocking stays within the bound.
TEST(TiledAttention, BlockSizeInvariance) {
  Spec s;
  s.num_q_heads = 8;
  s.num_kv_heads = 4;
  s.seqs = kMixed;
  s.extra_tokens = 2;
  s.sm_scale = 0.35f;
  Problem p = testing::make_problem(s, 9);
  const testing::Truth truth = testing::attention_f64(p);
  const int64_t rows = p.cu_q_lens[size_t(p.num_seqs)] * s.num_q_heads * s.head_dim;
  std::vector<float> base;
  for (int64_t kv_pages : {int64_t(1), int64_t(2), int64_t(3), p.pages_per_seq}) {
    std::vector<float> first;
    for (int64_t nq : {int64_t(1), int64_t(3), int64_t(8), p.num_tokens + 5}) {
      for (int64_t heads_blks : {1, 2, 4}) {
        SCOPED_TRACE("kv pages " + std::to_string(kv_pages) + " q " + std::to_string(nq) + " head blocks " +
                     std::to_string(heads_blks));
        p.num_kv_pages_per_block = kv_pages;
        p.num_queries_per_block = nq;
        const auto r = testing::run(p, s.num_q_heads / heads_blks, 2 * s.num_kv_heads / heads_blks);
        ASSERT_EQ(r.result.code, RPA_OK);
        expect_within_bound(p, r.out, truth);
        std::vector<float> valid(r.out.begin(), r.out.begin() + rows);
        if (first.empty()) {
          first = valid;
          continue;
        }
        for (int64_t i = 0; i < rows; ++i)
          ASSERT_EQ(std::bit_cast<uint32_t>(valid[size_t(i)]), std::bit_cast<uint32_t>(first[size_t(i)])) << i;
      }
    }
  }
}

// The KV heads of a step may run on several threads; each head's
// arithmetic is the same on any thread, so the output is bit-identical.
TEST(TiledAttention, ThreadCountDoesNotChangeTheResult) {
  Spec s;
  s.q_dtype = DType::kBFloat16;
  s.kv_dtype = DType::kFloat8E4M3FN;
  s.num_kv_heads = 8;
  s.num_q_heads = 16;
  s.head_dim = 32;
  s.seqs = {{20, 40}, {1, 33}, {30, 30}};
  s.mask_value = -3.0f;  // padding weight too, merged across threads
  Problem p = testing::make_problem(s, 31);
  p.num_kv_pages_per_block = 4;
  p.num_queries_per_block = 16;
  p.num_threads = 1;
  const auto one = testing::run(p, s.num_q_heads, 2 * s.num_kv_heads);
  for (int32_t threads : {2, 3, 8}) {
    p.num_threads = threads;
    const auto many = testing::run(p, s.num_q_heads, 2 * s.num_kv_heads);
    ASSERT_EQ(many.out.size(), one.out.size());
    for (size_t i = 0; i < one.out.size(); ++i)
      ASSERT_EQ(std::bit_cast<uint32_t>(many.out[i]), std::bit_cast<uint32_t>(one.out[i])) << threads << " threads, " << i;
    EXPECT_EQ(many.diags.lines(), one.diags.lines());
  }
}

// A finite mask_value small enough to matter: the kernel gives each zeroed
// slot past kv_len in the last KV block the score 0 + mask_value (it is
// causally masked, kernel.py:505-537), so those slots enter the softmax
// denominator. The emulation must agree with a float64 softmax that has
// exactly those extra slots (V = 0), differ from the reference's, and name
// the divergence.
TEST(TiledAttention, SmallMaskValueWeighsThePaddingSlots) {
  Spec s;
  s.seqs = {{3, 7}, {2, 10}};
  s.page_size = 4;
  s.mask_value = -1.0f;
  Problem p = testing::make_problem(s, 13);
  p.num_kv_pages_per_block = 2;  // blocks of 8 KV slots: 1 and 6 padding slots
  p.num_queries_per_block = 4;
  const auto r = testing::run(p, s.num_q_heads, 2 * s.num_kv_heads);
  ASSERT_EQ(r.result.code, RPA_OK);
  EXPECT_TRUE(r.diags.has(DiagKind::kMaskValueOverPadding));
  expect_within_bound(p, r.out, testing::attention_f64(p, {1, 6}));
  const testing::Truth ref = testing::attention_f64(p);
  double max_diff = 0;
  for (size_t i = 0; i < ref.out.size(); ++i) max_diff = std::max(max_diff, std::fabs(double(r.out[i]) - ref.out[i]));
  EXPECT_GT(max_diff, 1e-3);
  // The default mask value gives the padding weight exp(-2.4e38) = 0.
  p.spec.mask_value = static_cast<float>(-0.7 * double(std::numeric_limits<float>::max()));
  EXPECT_FALSE(testing::run(p, s.num_q_heads, 2 * s.num_kv_heads).diags.has(DiagKind::kMaskValueOverPadding));
}

// V near float32's largest values: every V element 1 times v_scale, every
// score 0 (sm_scale 0), so each KV block's dot(s_curr, v) (kernel.py:540)
// sums 8 weights of 1 times v_scale. At v_scale 2^126 that passes 3.4e38
// and the kernel's output is Inf where the reference's (the uniform average
// of V, v_scale itself) is finite: the emulation keeps the kernel's Inf and
// names the divergence. At 2^120 nothing overflows: the output is v_scale
// and nothing is reported.
TEST(TiledAttention, UnnormalisedPvOverflowIsAKnownDivergence) {
  Spec s;
  s.seqs = {{2, 16}, {1, 9}};
  s.sm_scale = 0.0f;
  s.has_v_scale = true;
  Problem p = testing::make_problem(s, 23);
  for (int64_t pg = 0; pg < p.total_num_pages; ++pg)
    for (int64_t slot = 0; slot < s.page_size; ++slot)
      for (int64_t kvh = 0; kvh < s.num_kv_heads; ++kvh)
        for (int64_t d = 0; d < s.head_dim; ++d) p.kv[p.kv_index(pg, slot, 2 * kvh + 1, d)] = 1.0f;
  p.num_kv_pages_per_block = 2;  // blocks of 8 keys
  p.num_queries_per_block = 2;
  for (const auto& [exp2, overflows] : {std::pair{126, true}, std::pair{120, false}}) {
    p.spec.v_scale = std::ldexp(1.0f, exp2);
    const auto r = testing::run(p, s.num_q_heads, 2 * s.num_kv_heads);
    ASSERT_EQ(r.result.code, RPA_OK);
    EXPECT_EQ(r.diags.has(DiagKind::kPvOverflow), overflows) << r.diags.lines().size();
    const int64_t rows = 3 * s.num_q_heads * s.head_dim;
    for (int64_t i = 0; i < rows; ++i) {
      if (overflows) ASSERT_TRUE(std::isinf(r.out[size_t(i)])) << i << ": " << r.out[size_t(i)];
      else ASSERT_NEAR(r.out[size_t(i)], p.spec.v_scale, 1e-6 * p.spec.v_scale) << i;
    }
  }
}

// docs/tiled.md: rows past cu_q_lens[num_seqs] come from acc_ref as the
// kernel left it. In a q block that only partly holds tokens, the rows past
// the last token keep the accumulator of the same rows of the previous q
// block (of the same head block); rows no grid step ever stored read the
// NaN that models uninitialised VMEM.
TEST(TiledAttention, RowsPastTheLastTokenHoldTheStaleAccumulator) {
  Spec s;
  s.seqs = {{4, 6}, {2, 5}};
  s.extra_tokens = 2;  // 8 rows, 6 valid
  Problem p = testing::make_problem(s, 17);
  p.num_kv_pages_per_block = 1;
  p.num_queries_per_block = 4;
  const auto r = testing::run(p, s.num_q_heads, 2 * s.num_kv_heads);
  const int64_t w = s.num_q_heads * s.head_dim;
  for (int64_t row : {6, 7})
    for (int64_t i = 0; i < w; ++i)
      EXPECT_EQ(std::bit_cast<uint32_t>(r.out[size_t(row * w + i)]), std::bit_cast<uint32_t>(r.out[size_t((row - 4) * w + i)]));
  p.num_queries_per_block = 8;  // one q block: rows 6, 7 were never stored
  const auto one = testing::run(p, s.num_q_heads, 2 * s.num_kv_heads);
  for (int64_t i = 6 * w; i < 8 * w; ++i) EXPECT_TRUE(std::isnan(one.out[size_t(i)])) << i;
}

TEST(TiledAttention, StrictTraceAssertsRaiseAssertionError) {
  Spec s;
  s.seqs = {{2, 3}};
  Problem p = testing::make_problem(s, 19);
  TiledConfig cfg;
  cfg.num_q_heads_per_blk = s.num_q_heads;
  cfg.num_combined_kv_heads_per_blk = 2 * s.num_kv_heads;
  cfg.strict_trace_asserts = true;
  std::vector<float> out(p.q.size());
  Diagnostics d;
  const rpa_problem view = p.view();
  const TiledResult r = tiled_attention(view, cfg, out.data(), d);
  EXPECT_EQ(r.code, RPA_ERR_REJECTED);
  EXPECT_EQ(r.error_class, "AssertionError");
  EXPECT_EQ(r.message, "");
}

// Only one of k_scale / v_scale with KV of another dtype than q: k and v
// reach flash_attention with different dtypes (kernel.py:476).
TEST(TiledAttention, OneScaleOnlyIsTheKvDtypeTraceAssertion) {
  Spec s;
  s.q_dtype = DType::kBFloat16;
  s.kv_dtype = DType::kFloat8E4M3FN;
  s.num_kv_heads = 2;
  s.num_q_heads = 4;
  s.seqs = {{2, 3}};
  s.has_k_scale = true;
  s.k_scale = 0.5f;
  Problem p = testing::make_problem(s, 23);
  p.num_kv_pages_per_block = 1;
  p.num_queries_per_block = 2;
  const auto r = testing::run(p, 4, 4);
  ASSERT_EQ(r.result.code, RPA_OK);
  EXPECT_TRUE(r.diags.has(DiagKind::kTraceAssertKvDtypeMismatch));
  expect_within_bound(p, r.out, testing::attention_f64(p));
}

}  // namespace
}  // namespace rpa::tiled
