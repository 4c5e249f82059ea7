// Tests of the fast kernel's planning bounds (kernels/fast/plan.cc): the
// bound on |sm_scale * q.k| that lets tiles skip the scan for large scores
// holds for float32 dot products summed in any order, including the tight
// case where Hoelder's inequality is an equality.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/fast/plan.h"

namespace rpa::fast {
namespace {

// q.k in float32 with one FMA per term, forward or backward (the tiles'
// chains run in some order of this kind; both ends of the order are tried).
float dot_fma(const std::vector<float>& q, const std::vector<float>& k, bool backward) {
  float s = 0.0f;
  const size_t n = q.size();
  for (size_t i = 0; i < n; ++i) {
    const size_t j = backward ? n - 1 - i : i;
    s = std::fma(q[j], k[j], s);
  }
  return s;
}

TEST(FastPlan, RawScoreBoundCoversFloat32DotProducts) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  for (int trial = 0; trial < 400; ++trial) {
    const int64_t D = std::vector<int64_t>{1, 7, 64, 128, 1000}[trial % 5];
    KernelCtx c;
    c.q_dtype = DType::kFloat32;
    c.head_dim = D;
    c.sm_scale = std::ldexp(unit(rng) + 0.5f, int(rng() % 9) - 6);
    c.has_k_scale = trial % 3 == 0;
    c.k_scale = c.has_k_scale ? std::ldexp(unit(rng) + 0.5f, int(rng() % 7) - 3) : 1.0f;
    const float magnitude = std::ldexp(1.0f, int(rng() % 20) - 10);
    const bool tight = trial % 2 == 0;  // every product positive and |k| at its max: Hoelder's equality
    const size_t n = static_cast<size_t>(D);
    std::vector<float> q(n), raw(n), k(n);
    double q1 = 0.0, kmax = 0.0;
    for (int64_t i = 0; i < D; ++i) {
      q[size_t(i)] = magnitude * (tight ? unit(rng) + 0.5f : 2.0f * unit(rng) - 1.0f);
      raw[size_t(i)] = tight ? 3.0f : std::round(255.0f * unit(rng) - 127.0f);
    }
    for (int64_t i = 0; i < D; ++i) {
      // Dequantised as the kernel does for float32 q: K * scale rounded to float32.
      k[size_t(i)] = c.has_k_scale ? raw[size_t(i)] * c.k_scale : raw[size_t(i)];
      q1 += float(std::fabs(q[size_t(i)]));
      kmax = std::max(kmax, double(std::fabs(raw[size_t(i)])));
    }
    // ||q||_1 as the kernel may sum it: in float32, up to (D - 1) units of
    // roundoff under the exact sum.
    const double q1_float = q1 * (1.0 - double(D) * 0x1p-24);
    const double bound = raw_score_bound(c, q1_float, kmax);
    for (bool backward : {false, true}) {
      const float score = dot_fma(q, k, backward) * c.sm_scale;
      EXPECT_LE(std::fabs(double(score)), bound)
          << "D=" << D << " trial=" << trial << " tight=" << tight << " backward=" << backward;
    }
  }
}

TEST(FastPlan, ScoresStayBelowNeedsFiniteKeysAndABound) {
  KernelCtx c;
  c.head_dim = 128;
  c.sm_scale = 0.125f;
  SeqPlan s;
  s.kmax = 2.0;
  s.k_finite = true;
  EXPECT_TRUE(scores_stay_below(c, s, 100.0, 128.0));   // 0.125 * 100 * 2 = 25 (padded)
  EXPECT_FALSE(scores_stay_below(c, s, 600.0, 128.0));  // 150
  EXPECT_FALSE(scores_stay_below(c, s, std::numeric_limits<double>::infinity(), 128.0));
  EXPECT_FALSE(scores_stay_below(c, s, std::nan(""), 128.0));
  s.k_finite = false;  // a NaN or Inf in K: kmax bounds only the finite ones
  EXPECT_FALSE(scores_stay_below(c, s, 100.0, 128.0));
}

}  // namespace
}  // namespace rpa::fast
