// Output rows whose float32 scores overflowed, recomputed in double precision.
#include "kernels/fast/overflow_rows.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <utility>
#include <vector>

#include "kernels/fast/thread_pool.h"
#include "oracle/dtype.h"

namespace rpa::fast {
namespace {

// a + b with b's rounding error kept (Knuth's TwoSum): a value as hi + lo.
struct DoubleDouble {
  double hi = 0, lo = 0;
  void add(double x) {
    const double s = hi + x, bp = s - hi;
    lo += (hi - (s - bp)) + (x - bp);
    hi = s;
  }
  void normalise() {
    const double s = hi + lo;
    lo -= s - hi;
    hi = s;
  }
};

// A key's score: sm_scale * q.k (after the soft cap) as a double-double,
// and whether mask_value is added to it. The mask term is kept apart: at
// scores of 1e75 a double-double resolves about 1e43, so `+ mask_value`
// (-20, say) would vanish and a masked key tied with the best would weigh
// 1 instead of e^-20 (kernel_diff found that one).
struct KeyScore {
  DoubleDouble base;
  bool masked = false;
};

// The softmax exponent of key j against key r: (s_j + M [j masked]) -
// (s_r + M [r masked]). A finite M cancels exactly between keys masked
// alike, as in the exact math; a non-finite one is added as the reference
// adds it (-inf - -inf is NaN where every key is masked).
double exponent(const KeyScore& j, const KeyScore& r, double mask_value) {
  const double base = (j.base.hi - r.base.hi) + (j.base.lo - r.base.lo);
  if (std::isfinite(mask_value))
    return j.masked == r.masked ? base : base + mask_value * (double(j.masked) - double(r.masked));
  return base + ((j.masked ? mask_value : 0.0) - (r.masked ? mask_value : 0.0));
}

// K or V element as the reference dequantises it: x.astype(f32) * scale,
// cast to q's dtype (kernel.py:118-123).
float dequantised(const KernelCtx& c, float x, bool scaled, float scale) {
  return scaled ? round_to(c.q_dtype, x * scale) : x;
}

// Row `t`, q head `h` of `s`, into `out` (head_dim values); false where an
// input is not finite (the row is then left as the kernel wrote it).
bool recompute_row(const KernelCtx& c, const rpa_problem& p, const SeqPlan& s, int64_t t, int64_t h,
                   std::vector<KeyScore>& score, std::vector<double>& acc) {
  const int64_t D = c.head_dim, ps = c.page_size;
  const int64_t g = h / c.group;
  const float* q = QHeadRow(c, s, t, h);
  if (!std::all_of(q, q + D, [](float x) { return std::isfinite(x); })) return false;
  const int32_t* pages = c.pages + s.page_row * c.pages_per_seq;
  const auto kv_row = [&](int64_t j, int64_t head) {
    const int64_t slot = int64_t(pages[j / ps]) * ps + j % ps;
    return p.kv_pages + (slot * c.num_combined_kv_heads + head) * D;
  };
  const RowRange r = row_range(c, s, t);
  score.assign(size_t(s.num_keys), {});
  int64_t best = -1;
  for (int64_t j = 0; j < s.num_keys; ++j) {
    const float* k = kv_row(j, 2 * g);
    DoubleDouble dot;
    for (int64_t d = 0; d < D; ++d) {
      const float kd = dequantised(c, k[d], c.has_k_scale, c.k_scale);
      if (!std::isfinite(kd)) return false;
      dot.add(double(q[d]) * double(kd));  // exact: 24-bit by 24-bit significands
    }
    dot.normalise();
    // sm_scale * q.k (kernel.py:132) as hi + lo: the product's rounding error by FMA.
    const double sm = c.sm_scale;
    KeyScore& x = score[size_t(j)];
    x.base = {dot.hi * sm, std::fma(dot.hi, sm, -dot.hi * sm) + dot.lo * sm};
    if (c.has_soft_cap) x.base = {double(c.soft_cap) * std::tanh((x.base.hi + x.base.lo) / double(c.soft_cap)), 0};
    x.masked = j < r.lo || j > r.hi;
    if (best < 0 || exponent(x, score[size_t(best)], c.mask_value) > 0) best = j;
  }
  std::fill(acc.begin(), acc.end(), 0.0);
  double sum = 0;
  for (int64_t j = 0; j < s.num_keys; ++j) {
    const double w = std::exp(exponent(score[size_t(j)], score[size_t(best)], c.mask_value));
    sum += w;
    const float* v = kv_row(j, 2 * g + 1);
    for (int64_t d = 0; d < D; ++d) {
      const float vd = dequantised(c, v[d], c.has_v_scale, c.v_scale);
      if (!std::isfinite(vd)) return false;
      acc[size_t(d)] += w * double(vd);
    }
  }
  for (int64_t d = 0; d < D; ++d) acc[size_t(d)] /= sum;
  return true;
}

}  // namespace

int64_t recompute_nonfinite_rows(const Plan& plan, const rpa_problem& p, int threads) {
  const KernelCtx& c = plan.ctx;
  const int64_t D = c.head_dim;
  // (sequence, token) units, claimed by the threads: a prefill whose
  // every score overflows has all its rows to redo.
  std::vector<std::pair<size_t, int64_t>> units;
  for (size_t i = 0; i < plan.seqs.size(); ++i) {
    const SeqPlan& s = plan.seqs[i];
    if (!s.k_finite || s.num_keys <= 0) continue;
    for (int64_t t = 0; t < s.num_tokens; ++t) units.emplace_back(i, t);
  }
  std::atomic<size_t> next{0};
  std::atomic<int64_t> rewritten{0};
  const int n = std::max(1, int(std::min<size_t>(size_t(std::max(threads, 1)), units.size())));
  ThreadPool::global().run(n, [&](int) {
    std::vector<KeyScore> score;
    std::vector<double> acc(size_t(std::max<int64_t>(D, 0)));
    for (size_t u = next.fetch_add(1); u < units.size(); u = next.fetch_add(1)) {
      const SeqPlan& s = plan.seqs[units[u].first];
      const int64_t t = units[u].second;
      for (int64_t h = 0; h < c.num_q_heads; ++h) {
        float* out = OutHeadRow(c, s, t, h);
        if (std::all_of(out, out + D, [](float x) { return std::isfinite(x); })) continue;
        if (!recompute_row(c, p, s, t, h, score, acc)) continue;
        for (int64_t d = 0; d < D; ++d) out[d] = round_to(c.q_dtype, float(acc[size_t(d)]));
        rewritten.fetch_add(1, std::memory_order_relaxed);
      }
    }
  });
  return rewritten.load();
}

}  // namespace rpa::fast
