// Tests of the tolerance model: ulp measurement, NaN/Inf positions, summaries, and both bounds' arithmetic.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "harness/tolerance.h"

namespace rpa {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

TEST(Tolerance, UlpsAreTheJudgesSpacingAtTheTruth) {
  EXPECT_EQ(error_ulps(DType::kBFloat16, 1.0078125, 1.0), 1.0);  // bf16 spacing in [1, 2) is 2^-7
  EXPECT_EQ(error_ulps(DType::kBFloat16, 0.99609375, 1.0), 0.5);
  EXPECT_EQ(error_ulps(DType::kFloat32, 1.0 + std::ldexp(1.0, -22), 1.0), 2.0);
  EXPECT_EQ(error_ulps(DType::kFloat8E4M3FN, 288.0, 256.0), 1.0);  // e4m3fn spacing in [256, 448] is 32
  EXPECT_EQ(error_ulps(DType::kInt8, 3.0, 5.0), 2.0);
  // Zero and subnormals use the smallest spacing.
  EXPECT_EQ(error_ulps(DType::kFloat16, std::ldexp(1.0, -24), 0.0), 1.0);
}

TEST(Tolerance, JudgingDtypeIsTheCoarser) {
  EXPECT_EQ(judging_dtype(DType::kFloat32, DType::kBFloat16, false), DType::kBFloat16);
  EXPECT_EQ(judging_dtype(DType::kFloat32, DType::kBFloat16, true), DType::kFloat32);  // V dequantised to q
  EXPECT_EQ(judging_dtype(DType::kBFloat16, DType::kFloat32, false), DType::kBFloat16);
  EXPECT_EQ(judging_dtype(DType::kBFloat16, DType::kFloat8E4M3FN, false), DType::kFloat8E4M3FN);
  EXPECT_EQ(judging_dtype(DType::kFloat16, DType::kInt8, false), DType::kInt8);
  EXPECT_EQ(path_unit_roundoff(DType::kFloat32, DType::kFloat32, false, false), std::ldexp(1.0, -24));
  EXPECT_EQ(path_unit_roundoff(DType::kFloat32, DType::kFloat8E5M2, true, false), std::ldexp(1.0, -3));
  EXPECT_EQ(path_unit_roundoff(DType::kBFloat16, DType::kInt4, true, true), std::ldexp(1.0, -8));
  EXPECT_EQ(path_unit_roundoff(DType::kBFloat16, DType::kInt4, false, false), 0.5);
}

TEST(Tolerance, NanAndInfMustAgreeInPosition) {
  const std::vector<double> truth{1.0, kNaN, kInf, -kInf, 2.0};
  std::vector<double> same = truth;
  EXPECT_TRUE(summarize_errors(same, truth, DType::kFloat32, {}).pass);
  std::vector<double> nan_moved{kNaN, 1.0, kInf, -kInf, 2.0};
  const ErrorSummary a = summarize_errors(nan_moved, truth, DType::kFloat32, {});
  EXPECT_FALSE(a.pass);
  EXPECT_EQ(a.nan_mismatches, 2);
  EXPECT_EQ(a.first_mismatch, 0);
  std::vector<double> inf_sign{1.0, kNaN, -kInf, -kInf, 2.0};
  const ErrorSummary b = summarize_errors(inf_sign, truth, DType::kFloat32, {});
  EXPECT_EQ(b.inf_mismatches, 1);
  EXPECT_FALSE(b.pass);
}

// Where the reference's own float32 arithmetic is NaN or Inf (the rounded
// truth), a NaN or Inf of either kind is accepted; a finite output there is
// still held to the exact truth, and a NaN where the reference is finite
// still fails.
TEST(Tolerance, NonFiniteOutputsAreAcceptedOnlyWhereTheReferenceIsNonFinite) {
  const std::vector<double> truth{1.0, 2.0, kInf, 4.0, 5.0};
  const std::vector<double> reference{1.0, kNaN, kNaN, kInf, 5.0};
  const std::vector<double> bound(5, 0.5);
  const std::vector<double> overflowing{1.0, kNaN, kNaN, -kInf, 5.0};
  const ErrorSummary a = summarize_errors(overflowing, truth, DType::kFloat32, bound, reference);
  EXPECT_TRUE(a.pass);
  EXPECT_EQ(a.reference_nonfinite, 3);
  EXPECT_FALSE(summarize_errors(overflowing, truth, DType::kFloat32, bound).pass);  // without the reference
  const std::vector<double> exact{1.0, 2.0, kInf, 4.0, 5.0};
  const ErrorSummary b = summarize_errors(exact, truth, DType::kFloat32, bound, reference);
  EXPECT_TRUE(b.pass);
  EXPECT_EQ(b.reference_nonfinite, 0);
  const std::vector<double> wrong_finite{1.0, 9.0, kInf, 4.0, 5.0};  // finite, far from the truth
  EXPECT_EQ(summarize_errors(wrong_finite, truth, DType::kFloat32, bound, reference).over_bound, 1);
  const std::vector<double> nan_elsewhere{1.0, kNaN, kNaN, kInf, kNaN};  // the reference is finite at 4
  const ErrorSummary c = summarize_errors(nan_elsewhere, truth, DType::kFloat32, bound, reference);
  EXPECT_FALSE(c.pass);
  EXPECT_EQ(c.nan_mismatches, 1);
}

TEST(Tolerance, SummaryHasMaxP99AndMean) {
  // 100 elements: errors of 0 ulps except element 7 (3 ulps) and 42 (1 ulp).
  std::vector<double> truth(100, 1.0), actual(100, 1.0);
  actual[7] = 1.0 + 3 * std::ldexp(1.0, -7);
  actual[42] = 1.0 + std::ldexp(1.0, -7);
  const ErrorSummary s = summarize_errors(actual, truth, DType::kBFloat16, {});
  EXPECT_EQ(s.max_ulps, 3.0);
  EXPECT_EQ(s.worst, 7);
  EXPECT_EQ(s.p99_ulps, 1.0);  // the 99th of 100 sorted errors (index 98)
  EXPECT_DOUBLE_EQ(s.mean_ulps, 0.04);
  EXPECT_TRUE(s.pass);
}

TEST(Tolerance, ReferenceBoundIsOneUlpOrTheFloat32Floor) {
  const std::vector<double> truth{1.0, -3.0, 0.5};
  const std::vector<double> widen{0.0, 0.25, 0.0};
  const auto b16 = reference_bound(DType::kBFloat16, truth, widen);
  EXPECT_EQ(b16[0], std::ldexp(1.0, -7));
  EXPECT_EQ(b16[1], 2 * std::ldexp(1.0, -6) + 0.25);  // widened: the shift plus two ulps
  EXPECT_EQ(b16[2], std::ldexp(1.0, -8));
  const auto b32 = reference_bound(DType::kFloat32, truth, {});
  EXPECT_DOUBLE_EQ(b32[0], 1e-5 * 4);  // 1e-5 * (1 + max |truth|)
  // One bf16 ulp passes; two fail.
  std::vector<double> actual{1.0078125, -3.0, 0.5};
  EXPECT_TRUE(summarize_errors(actual, truth, DType::kBFloat16, reference_bound(DType::kBFloat16, truth, {})).pass);
  actual[0] = 1.015625;
  const ErrorSummary s = summarize_errors(actual, truth, DType::kBFloat16, reference_bound(DType::kBFloat16, truth, {}));
  EXPECT_FALSE(s.pass);
  EXPECT_EQ(s.over_bound, 1);
  EXPECT_EQ(s.max_bound_ratio, 2.0);
}

TEST(Tolerance, KernelBoundScalesWithAttendedV) {
  const std::vector<double> truth{0.5, 0.0};
  const std::vector<double> vmax{4.0, 100.0};
  const double u = std::ldexp(1.0, -8);
  const auto b = kernel_bound(u, truth, vmax);
  const double floor32 = 1e-5 * 1.5;
  EXPECT_DOUBLE_EQ(b[0], 2 * u * 4.5 + floor32);
  EXPECT_DOUBLE_EQ(b[1], 2 * u * 100 + floor32);
}

TEST(Tolerance, FarWorseThanTheReference) {
  ErrorSummary ref, impl;
  ref.max_ulps = 1;
  impl.max_ulps = 15;
  EXPECT_FALSE(far_worse_than_reference(impl, ref));
  impl.max_ulps = 17;
  EXPECT_TRUE(far_worse_than_reference(impl, ref));
  ref.max_ulps = 0;
  impl.max_ulps = 2;
  EXPECT_FALSE(far_worse_than_reference(impl, ref));  // the floor
  impl.max_ulps = 0;
  impl.nan_mismatches = 1;
  EXPECT_TRUE(far_worse_than_reference(impl, ref));
  // With bounds: a near-zero output makes ulps huge, the bound ratio not.
  ErrorSummary ref_b, impl_b;
  ref_b.max_ulps = 800, ref_b.max_bound_ratio = 0.01;
  impl_b.max_ulps = 15000, impl_b.max_bound_ratio = 0.1;
  EXPECT_FALSE(far_worse_than_reference(impl_b, ref_b));  // under the floor ratio
  impl_b.max_bound_ratio = 0.2;
  EXPECT_TRUE(far_worse_than_reference(impl_b, ref_b));   // 20x the reference's share
  impl_b.max_bound_ratio = 0.15, ref_b.max_bound_ratio = 0.05;
  EXPECT_FALSE(far_worse_than_reference(impl_b, ref_b));
}

// Only elements flagged by the rounded truth may be judged against it, and
// then only where the output is nearer to it than to the exact truth.
TEST(Tolerance, KernelJudgingTruthTakesTheRoundedTruthOnlyWhereTheReferenceOverflowed) {
  const std::vector<double> exact = {0.6, 0.6, 0.6, 0.6}, rounded = {1.0, 1.0, 1.0, 1.0};
  const std::vector<double> actual = {1.0, 0.6, 1.0, 0.9};
  const std::vector<char> flagged = {1, 1, 0, 1};
  int64_t taken = -1;
  const std::vector<double> t = kernel_judging_truth(actual, exact, rounded, flagged, {}, &taken);
  EXPECT_EQ(t, (std::vector<double>{1.0, 0.6, 0.6, 1.0}));
  EXPECT_EQ(taken, 2);
  EXPECT_EQ(kernel_judging_truth(actual, exact, rounded, {}, {}), exact);
  // A NaN where the reference overflowed is taken as is; elsewhere it stays a mismatch.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> nans = {nan, nan}, e2 = {0.6, 0.6}, r2 = {0.0, 0.0};
  const std::vector<char> f2 = {1, 0};
  const std::vector<double> n = kernel_judging_truth(nans, e2, r2, f2, {}, &taken);
  EXPECT_TRUE(std::isnan(n[0]));
  EXPECT_EQ(n[1], 0.6);
  EXPECT_EQ(taken, 1);
}

// Where the rounded truth (the reference's own float32 arithmetic) is
// beyond the kernel bound from the exact truth, a kernel output nearer to
// it is judged against it; where the rounded truth is within the bound,
// the exact truth judges as before, however near the output is to the
// rounded one. No NaN is accepted for that reason alone, and a NaN truth
// (which no distance compares) leaves the element to the NaN-position check.
TEST(Tolerance, KernelJudgingTruthTakesTheRoundedTruthWhereTheReferenceItselfIsBeyondTheBound) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> exact = {9.1365, 9.1365, 9.1365, 0.5, 0.5, 0.5, 0.5};
  const std::vector<double> rounded = {9.1342, 9.1342, 9.1342, 0.5004, 0.5, nan, 0.5009};
  const std::vector<double> bound = {0.002, 0.002, 0.002, 0.001, 0.001, 0.001, 0.001};
  const std::vector<double> actual = {9.1341, 9.1364, nan, 0.5004, nan, 0.5, 0.50101};
  int64_t taken = -1;
  const std::vector<double> t = kernel_judging_truth(actual, exact, rounded, {}, bound, &taken);
  EXPECT_EQ(t[0], 9.1342);  // the reference 0.0023 off: the output follows it
  EXPECT_EQ(t[1], 9.1365);  // the output is nearer the exact truth
  EXPECT_EQ(t[2], 9.1365);  // NaN output: still a mismatch against the exact truth
  EXPECT_EQ(t[3], 0.5);     // the reference at 0.4 of the bound (under kReferenceOffShare): the exact truth judges
  EXPECT_EQ(t[4], 0.5);
  EXPECT_EQ(t[5], 0.5);  // NaN rounded truth: no distance, the exact truth stays
  // The reference at 0.9 of the bound, inside it: an output a little past
  // the reference (1.01 of the bound from the exact truth) follows it.
  EXPECT_EQ(t[6], 0.5009);
  EXPECT_EQ(taken, 2);
  // The same element judged against the exact truth fails the kernel bound, against the rounded one it passes.
  const std::vector<double> one_actual = {actual[0]}, one_exact = {exact[0]}, one_bound = {bound[0]};
  EXPECT_FALSE(summarize_errors(one_actual, one_exact, DType::kFloat32, one_bound).pass);
  const std::vector<double> one_target = {t[0]};
  EXPECT_TRUE(summarize_errors(one_actual, one_target, DType::kFloat32, one_bound).pass);
}

// The formula written out by hand: 2u (max|V| + |truth|) + 1e-5 (1 + max|truth|).
TEST(Tolerance, PlainBoundShareIsTheLiteralFormulaAgainstTheExactTruth) {
  const double u = 1.0 / 256;  // bfloat16
  const std::vector<double> exact = {1.0, -2.0}, vmax = {3.0, 3.0};
  const double floor32 = 1e-5 * (1 + 2.0);
  const double b0 = 2 * u * (3.0 + 1.0) + floor32, b1 = 2 * u * (3.0 + 2.0) + floor32;
  EXPECT_NEAR(plain_bound_share(u, std::vector<double>{1.0 + 0.5 * b0, -2.0}, exact, vmax), 0.5, 1e-12);
  EXPECT_NEAR(plain_bound_share(u, std::vector<double>{1.0 + 0.5 * b0, -2.0 - 1.5 * b1}, exact, vmax), 1.5, 1e-12);
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  // A NaN or infinity where the exact truth is finite fails any finite share.
  EXPECT_EQ(plain_bound_share(u, std::vector<double>{nan, -2.0}, exact, vmax), inf);
  EXPECT_EQ(plain_bound_share(u, std::vector<double>{1.0, inf}, exact, vmax), inf);
  // The same non-finite value as the truth counts nothing; the other infinity fails.
  const std::vector<double> nonfinite = {nan, inf};
  EXPECT_EQ(plain_bound_share(u, std::vector<double>{nan, inf}, nonfinite, vmax), 0.0);
  EXPECT_EQ(plain_bound_share(u, std::vector<double>{nan, -inf}, nonfinite, vmax), inf);
}

TEST(Tolerance, SummaryJsonIsOneObject) {
  const std::vector<double> truth{1.0};
  const std::string j = summary_json(summarize_errors(truth, truth, DType::kFloat16, {}), DType::kFloat16);
  EXPECT_EQ(j.front(), '{');
  EXPECT_EQ(j.back(), '}');
  EXPECT_NE(j.find("\"dtype\": \"float16\""), std::string::npos);
  EXPECT_NE(j.find("\"pass\": true"), std::string::npos);
}

}  // namespace
}  // namespace rpa
