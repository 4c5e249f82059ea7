// Tests of the fast kernel's planning bounds (kernels/fast/plan.cc): the
// bound on |sm_scale * q.k| that lets tiles skip the scan for large scores
// holds for float32 dot products summed in any order, including the tight
// case where Hoelder's inequality is an equality; the per-sequence K/V
// facts the plan reads from the cache's statistics match a direct pass
// over the sequence's gathered keys.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/fast/native_kv.h"
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

// kmax (max |K| over the attended keys' finite elements) and k_finite
// (every K and V element of those keys finite) against a pass over the
// float32 KV values themselves, gathered through page_indices as the
// reference gathers them (a negative index wrapped once, the rest clamped):
// slots past kv_len hold NaN, Inf and the largest values, which must not
// count; pages are shared between sequences; page sizes 16 (whole pages of
// statistics at once) and 5 (ragged ones).
TEST(FastPlan, SequenceKvFactsMatchAPassOverTheGatheredKeys) {
  std::mt19937 rng(20261207);
  const float kInf = std::numeric_limits<float>::infinity(), kNaN = std::nanf("");
  int finite_seqs = 0, nonfinite_seqs = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const int64_t ps = trial % 2 ? 16 : 5, P = 6, pps = 4, D = 4, H = 2 * (1 + trial % 2), seqs = 3;
    const int64_t slot_elems = H * D;
    std::vector<float> kv(size_t(P * ps * slot_elems));
    std::uniform_real_distribution<float> mag(-3.0f, 3.0f);
    for (float& x : kv) x = mag(rng);
    std::vector<int32_t> kv_lens(seqs), pages(size_t(seqs * pps)), cu(seqs + 1);
    for (int64_t i = 0; i < seqs; ++i) {
      kv_lens[size_t(i)] = int32_t(rng() % uint32_t(pps * ps + 1));
      for (int64_t k = 0; k < pps; ++k) pages[size_t(i * pps + k)] = int32_t(rng() % 10) - 3;  // -3..6
      cu[size_t(i + 1)] = int32_t(i + 1);
    }
    // A few poisoned elements anywhere: inside some sequence's keys or not.
    for (int n = int(rng() % 4); n > 0; --n) {
      const float poison[] = {kNaN, kInf, -kInf, 3e38f};
      kv[rng() % kv.size()] = poison[rng() % 4];
    }
    std::vector<float> q(size_t(seqs * (H / 2) * D), 0.5f), out(q.size());
    rpa_problem p{};
    p.abi_version = RPA_ABI_VERSION;
    p.q_dtype = p.kv_dtype = RPA_FLOAT32;
    p.num_tokens = seqs, p.num_q_heads = H / 2, p.head_dim = D;
    p.total_num_pages = P, p.page_size = ps, p.num_combined_kv_heads = H;
    p.max_num_seqs = seqs, p.pages_per_seq = pps, p.num_seqs = int32_t(seqs);
    p.q = q.data(), p.kv_pages = kv.data(), p.kv_lens = kv_lens.data();
    p.page_indices = pages.data(), p.cu_q_lens = cu.data();
    p.sm_scale = 1.0f, p.mask_value = -1e30f;
    const NativeKv nkv = encode_kv(p);
    Plan plan;
    std::string error;
    ASSERT_TRUE(make_plan(p, nkv, PlanShape{}, true, out.data(), plan, error)) << error;
    ASSERT_EQ(plan.seqs.size(), size_t(seqs));
    for (int64_t i = 0; i < seqs; ++i) {
      float kmax = 0.0f;
      bool finite = true;
      for (int64_t j = 0; j < kv_lens[size_t(i)]; ++j) {
        int64_t page = pages[size_t(i * pps + j / ps)];
        if (page < 0) page += P;
        page = std::clamp<int64_t>(page, 0, P - 1);
        const float* slot = kv.data() + (page * ps + j % ps) * slot_elems;
        for (int64_t e = 0; e < slot_elems; ++e) {
          const float x = slot[e];
          if (!std::isfinite(x)) finite = false;
          else if ((e / D) % 2 == 0) kmax = std::max(kmax, std::fabs(x));
        }
      }
      const SeqPlan& s = plan.seqs[size_t(i)];
      EXPECT_EQ(s.k_finite, finite) << "trial " << trial << " seq " << i;
      EXPECT_EQ(s.kmax, double(kmax)) << "trial " << trial << " seq " << i;
      (finite ? finite_seqs : nonfinite_seqs)++;
    }
  }
  // Both kinds of sequence were drawn often enough to matter.
  EXPECT_GT(finite_seqs, 100);
  EXPECT_GT(nonfinite_seqs, 50);
}

}  // namespace
}  // namespace rpa::fast
