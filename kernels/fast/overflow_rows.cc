// Output rows whose float32 scores overflowed, recomputed in double precision.
#include "kernels/fast/overflow_rows.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
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

// One KV head's K and V over a sequence's keys as the reference
// dequantises them: x.astype(f32) * scale, cast to q's dtype
// (kernel.py:118-123). Every q head of the group and every token of the
// sequence reads the same values, so they are made once per (sequence, KV
// head) a thread meets rather than per row and key (a 1024-token prefill
// whose every row overflows: 9.9 s before, figures in docs/fast_kernel.md).
struct HeadKv {
  size_t seq = SIZE_MAX;
  int64_t g = -1;
  bool finite = false;  // every K and V element of the keys is finite
  std::vector<float> k, v;  // [key][head_dim]

  void load(const KernelCtx& c, const rpa_problem& p, const SeqPlan& s, size_t seq_index, int64_t kv_head) {
    seq = seq_index;
    g = kv_head;
    const int64_t D = c.head_dim, ps = c.page_size, n = s.num_keys;
    const int32_t* pages = c.pages + s.page_row * c.pages_per_seq;
    k.resize(size_t(n * D));
    v.resize(size_t(n * D));
    for (int64_t j = 0; j < n; ++j) {
      const int64_t slot = int64_t(pages[j / ps]) * ps + j % ps;
      const float* kv = p.kv_pages + (slot * c.num_combined_kv_heads + 2 * g) * D;
      dequantise(c, kv, c.has_k_scale, c.k_scale, k.data() + j * D);
      dequantise(c, kv + D, c.has_v_scale, c.v_scale, v.data() + j * D);
    }
    finite = std::all_of(k.begin(), k.end(), [](float x) { return std::isfinite(x); }) &&
             std::all_of(v.begin(), v.end(), [](float x) { return std::isfinite(x); });
  }

 private:
  static void dequantise(const KernelCtx& c, const float* x, bool scaled, float scale, float* out) {
    for (int64_t d = 0; d < c.head_dim; ++d) out[d] = scaled ? round_to(c.q_dtype, x[d] * scale) : x[d];
  }
};

// q.k as a double-double: each product exact in double (24-bit by 24-bit
// significands), summed in four independent TwoSum chains (they overlap in
// the pipeline instead of waiting on one another), then combined. Eight
// chains held as arrays measured the same.
DoubleDouble exact_dot(const float* q, const float* k, int64_t D) {
  DoubleDouble part[4];
  int64_t d = 0;
  for (; d + 4 <= D; d += 4)
    for (int i = 0; i < 4; ++i) part[i].add(double(q[d + i]) * double(k[d + i]));
  for (; d < D; ++d) part[0].add(double(q[d]) * double(k[d]));
  for (int i = 1; i < 4; ++i) {
    part[0].add(part[i].hi);
    part[0].lo += part[i].lo;
  }
  part[0].normalise();
  return part[0];
}

// Row `t`, q head `h` of `s`, into `acc` (head_dim values) from its KV
// head's values `kv`; false where q's row is not finite (the row is then
// left as the kernel wrote it).
bool recompute_row(const KernelCtx& c, const SeqPlan& s, int64_t t, int64_t h, const HeadKv& kv,
                   std::vector<KeyScore>& score, std::vector<double>& acc) {
  const int64_t D = c.head_dim;
  const float* q = QHeadRow(c, s, t, h);
  if (!std::all_of(q, q + D, [](float x) { return std::isfinite(x); })) return false;
  const RowRange r = row_range(c, s, t);
  score.assign(size_t(s.num_keys), {});
  int64_t best = -1;
  for (int64_t j = 0; j < s.num_keys; ++j) {
    const DoubleDouble dot = exact_dot(q, kv.k.data() + j * D, D);
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
    const float* v = kv.v.data() + j * D;
    for (int64_t d = 0; d < D; ++d) acc[size_t(d)] += w * double(v[d]);
  }
  for (int64_t d = 0; d < D; ++d) acc[size_t(d)] /= sum;
  return true;
}

}  // namespace

int64_t recompute_nonfinite_rows(const Plan& plan, const rpa_problem& p, int threads) {
  const KernelCtx& c = plan.ctx;
  const int64_t D = c.head_dim;
  // (sequence, KV head, block of tokens) units in that order, claimed by
  // the threads: consecutive units share a KV head's dequantised values,
  // and a long prefill whose every score overflows still spreads over
  // every thread.
  constexpr int64_t kUnitTokens = 16;
  struct Unit {
    size_t seq;
    int64_t g, t0;
  };
  std::vector<Unit> units;
  for (size_t i = 0; i < plan.seqs.size(); ++i) {
    const SeqPlan& s = plan.seqs[i];
    if (!s.k_finite || s.num_keys <= 0) continue;
    for (int64_t g = 0; g < c.num_kv_heads; ++g)
      for (int64_t t0 = 0; t0 < s.num_tokens; t0 += kUnitTokens) units.push_back({i, g, t0});
  }
  std::atomic<size_t> next{0};
  std::atomic<int64_t> rewritten{0};
  const int n = std::max(1, int(std::min<size_t>(size_t(std::max(threads, 1)), units.size())));
  ThreadPool::global().run(n, [&](int) {
    HeadKv kv;
    std::vector<KeyScore> score;
    std::vector<double> acc(size_t(std::max<int64_t>(D, 0)));
    for (size_t u = next.fetch_add(1); u < units.size(); u = next.fetch_add(1)) {
      const Unit& unit = units[u];
      const SeqPlan& s = plan.seqs[unit.seq];
      for (int64_t t = unit.t0; t < std::min(s.num_tokens, unit.t0 + kUnitTokens); ++t) {
        for (int64_t h = unit.g * c.group; h < (unit.g + 1) * c.group; ++h) {
          float* out = OutHeadRow(c, s, t, h);
          if (std::all_of(out, out + D, [](float x) { return std::isfinite(x); })) continue;
          // Rows whose K or V hold a NaN or Inf keep the kernel's answer:
          // the reference's poisoning, which the exact math shares.
          if (kv.seq != unit.seq || kv.g != unit.g) kv.load(c, p, s, unit.seq, unit.g);
          if (!kv.finite || !recompute_row(c, s, t, h, kv, score, acc)) continue;
          for (int64_t d = 0; d < D; ++d) out[d] = round_to(c.q_dtype, float(acc[size_t(d)]));
          rewritten.fetch_add(1, std::memory_order_relaxed);
        }
      }
    }
  });
  return rewritten.load();
}

}  // namespace rpa::fast
