// Tests of the conform judge's verdicts: the bound against the exact truth, the far-worse rule, and which failures are kernel findings.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "harness/conform.h"

namespace rpa {
namespace {

// One row of four float32 elements; the truth is its own rounded and exact
// truth, V's largest |element| 1 everywhere.
struct Judged {
  Case c;
  Truths truths;
  ImplOutput reference;

  Judged() {
    c.call.q.dtype = DType::kFloat32;
    c.call.kv_pages.dtype = DType::kFloat32;
    TruthOutput t;
    t.rows = 1, t.num_q_heads = 1, t.head_dim = 4;
    t.values = {0.5, -0.25, 0.125, 1.0};
    t.widen.assign(4, 0.0);
    t.v_abs_max.assign(4, 1.0);
    truths.rounded = t;
    truths.exact = t;
    reference = output({0.5f, -0.25f, 0.125f, 1.0f});
  }
  static ImplOutput output(std::vector<float> v, std::vector<std::string> diagnostics = {}) {
    ImplOutput o;
    o.rows = 1, o.num_q_heads = 1, o.head_dim = 4;
    o.values = std::move(v);
    o.diagnostics = std::move(diagnostics);
    return o;
  }
};

// 1e-5 off one element: inside the kernel bound (2u (1 + |t|) + 1e-5 (1 +
// 1), about 2e-5 with u = 2^-24) at half of it, far worse than the
// reference's exact answer (shares of the bound under 1/8 are never flagged).
constexpr float kSmallError = 1e-5f;

TEST(ConformJudge, FarWorseThanTheReferenceFailsUnlessAKnownDivergenceNamesIt) {
  Judged j;
  const ImplOutput plain = Judged::output({0.5f + kSmallError, -0.25f, 0.125f, 1.0f});
  const Verdict alone = judge(j.c, "fast", plain, j.truths);
  EXPECT_TRUE(alone.ok) << alone.detail;  // within the bound, no reference to compare with
  const Verdict worse = judge(j.c, "fast", plain, j.truths, &j.reference);
  EXPECT_FALSE(worse.ok);
  EXPECT_FALSE(worse.kernel_finding);
  const ImplOutput named = Judged::output({0.5f + kSmallError, -0.25f, 0.125f, 1.0f},
                                          {"known-divergence.mask-value-over-padding: ..."});
  const Verdict finding = judge(j.c, "tiled", named, j.truths, &j.reference);
  EXPECT_FALSE(finding.ok);
  EXPECT_TRUE(finding.kernel_finding) << finding.detail;
}

TEST(ConformJudge, NanIsAcceptedOnlyWhereTheRoundedTruthIsNonFinite) {
  Judged j;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const ImplOutput got = Judged::output({nan, -0.25f, 0.125f, 1.0f});
  EXPECT_FALSE(judge(j.c, "fast", got, j.truths).ok);
  j.truths.rounded.values[0] = std::numeric_limits<double>::infinity();  // the reference's float32 overflowed
  const Verdict v = judge(j.c, "fast", got, j.truths);
  EXPECT_TRUE(v.ok) << v.detail;
  const ImplOutput wrong = Judged::output({nan, -0.25f, 0.125f, 0.0f});  // and a finite element off
  EXPECT_FALSE(judge(j.c, "fast", wrong, j.truths).ok);
}

// Where the reference is off the exact truth (0.9 of the kernel bound), a
// kernel past the bound but beside the reference passes the judge; the
// plain share (the literal check, exact truth only) still reports both as
// they are against the exact truth.
TEST(ConformJudge, PlainShareIgnoresTheRoundedTruth) {
  Judged j;
  // The kernel bound at element 0: 2u (1 + 0.5) + 1e-5 (1 + 1), u = 2^-24.
  const double bound = 2 * std::ldexp(1.0, -24) * 1.5 + 2e-5;
  j.truths.rounded.values[0] = 0.5 + 0.9 * bound;
  j.reference = Judged::output({float(0.5 + 0.9 * bound), -0.25f, 0.125f, 1.0f});
  const ImplOutput past = Judged::output({float(0.5 + 1.05 * bound), -0.25f, 0.125f, 1.0f});
  const Verdict v = judge(j.c, "fast", past, j.truths, &j.reference);
  EXPECT_TRUE(v.ok) << v.detail;
  // float32 outputs: within an ulp at 0.5 (6e-8, 0.003 of the bound).
  EXPECT_NEAR(v.plain_share, 1.05, 0.01);
  EXPECT_NEAR(v.reference_plain_share, 0.9, 0.01);
  const Verdict alone = judge(j.c, "fast", past, j.truths);
  EXPECT_EQ(alone.reference_plain_share, -1);  // no reference output: not known
}

// Where the reference's float32 overflowed (NaN everywhere, the rounded
// truth NaN) and a kernel gives the exact math's answer, half its bound
// off: the reference has no error to be far better than. The same output
// beside a finite reference that is exact is far worse (the rule still
// holds where both have values).
TEST(ConformJudge, AFiniteAnswerIsNotFarWorseThanANanReference) {
  Judged j;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const ImplOutput got = Judged::output({0.5f + kSmallError, -0.25f, 0.125f, 1.0f});
  Judged overflowed;
  overflowed.truths.rounded.values.assign(4, std::numeric_limits<double>::quiet_NaN());
  overflowed.reference = Judged::output({nan, nan, nan, nan});
  const Verdict v = judge(overflowed.c, "fast", got, overflowed.truths, &overflowed.reference);
  EXPECT_TRUE(v.ok) << v.detail;
  EXPECT_FALSE(judge(j.c, "fast", got, j.truths, &j.reference).ok);
}

}  // namespace
}  // namespace rpa
