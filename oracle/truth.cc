// The truth of the reference attention in exact and 50-digit arithmetic, rounded at the source's rounding points or not at all.
#include "oracle/truth.h"

#include <cmath>
#include <limits>
#include <stdexcept>

#include "oracle/correct_math.h"
#include "oracle/einsum_dtypes.h"
#include "oracle/exact_round.h"
#include "oracle/exact_sum.h"
#include "oracle/real.h"
#include "oracle/reference_plan.h"
#include "oracle/work_split.h"

namespace rpa {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

float exp_f32(float x, bool no_filters) {
  if (!no_filters) return exp_f32_correct(x);
  return static_cast<float>(round_real_to(DType::kFloat32, boost::multiprecision::exp(Real(x))));
}

float tanh_f32(float x, bool no_filters) {
  if (!no_filters) return tanh_f32_correct(x);
  return static_cast<float>(round_real_to(DType::kFloat32, boost::multiprecision::tanh(Real(x))));
}

// The double sum and magnitude of sum_i a[i] * b[i] (products of dtype
// values, exact in double), in four partial sums (any order keeps
// certain_rounding's bound).
// Eight TwoSum chains in plain arrays, so that the compiler can vectorise.
DoubleSum double_dot(const double* a, const double* b, int64_t n) {
  constexpr int W = 8;
  double sum[W] = {}, mag[W] = {}, err[W] = {};
  int64_t i = 0;
  for (; i + W <= n; i += W)
    for (int k = 0; k < W; ++k) {
      const double t = a[i + k] * b[i + k];
      const double s = sum[k] + t, bp = s - sum[k];
      err[k] += std::fabs((sum[k] - (s - bp)) + (t - bp));
      sum[k] = s;
      mag[k] += std::fabs(t);
    }
  DoubleSum r;
  for (int k = 0; k < W; ++k) {
    DoubleSum part;
    part.sum = sum[k], part.magnitude = mag[k], part.exact = err[k] == 0, part.n = n / W;
    r = merge(r, part);
  }
  for (; i < n; ++i) r.add(a[i] * b[i]);
  r.n = n;
  return r;
}

// The per-item inputs: dequantised K and V of one (sequence, KV head).
struct Block {
  int64_t C = 0, D = 0;
  std::vector<double> k, v;
};

Block load_block(const ReferencePlan& p, const SeqPlan& s, int64_t g, const float* kv) {
  Block b;
  b.C = s.kv_rows, b.D = p.head_dim;
  b.k.resize(static_cast<size_t>(b.C * b.D));
  b.v.resize(static_cast<size_t>(b.C * b.D));
  for (int64_t c = 0; c < b.C; ++c)
    for (int64_t d = 0; d < b.D; ++d) {
      b.k[c * b.D + d] = dequantised_kv(p, s, kv, true, c, g, d);
      b.v[c * b.D + d] = dequantised_kv(p, s, kv, false, c, g, d);
    }
  return b;
}

struct Outputs {
  double* values;
  double* widen;
  double* v_abs_max;
  char* scores_off_exact;
};

// A masked key's weight is e^(s + mask_value - max): with a mask_value of
// a few units (mask_value = -1, say) masked keys carry real weight, so the
// row attends them too; below -kNegligibleMask (the default is -2.4e38)
// their weight is below e^-1000 of the largest. Scores past 1000 in
// magnitude that could lift a masked key back are not accounted for.
constexpr double kNegligibleMask = 1000.0;

void write_v_abs_max(const ReferencePlan& p, const SeqPlan& s, const Block& b, int64_t r, double* dst) {
  std::vector<char> attended(static_cast<size_t>(b.C));
  const double mask = p.options.mask_value;
  const bool masked_weigh = std::isfinite(mask) && mask > -kNegligibleMask;
  bool any = false;
  for (int64_t c = 0; c < b.C; ++c) any = (attended[c] = masked_weigh || !is_masked(p, s, r, c)) || any;
  std::fill(dst, dst + b.D, 0.0);
  for (int64_t c = 0; c < b.C; ++c)
    if (!any || attended[c])
      for (int64_t d = 0; d < b.D; ++d) dst[d] = std::max(dst[d], std::fabs(b.v[c * b.D + d]));
}

// 2^24: from here on float32 numbers are 2 or more apart.
constexpr float kFloat32ScoresUnresolved = 16777216.0f;

// Rounded mode for one (sequence, KV head).
void attend_rounded(const ReferencePlan& p, const SeqPlan& s, int64_t g, const float* q, const float* kv,
                    const TruthOptions& opt, Outputs out) {
  const Block b = load_block(p, s, g, kv);
  const int64_t C = b.C, D = b.D;
  const ReferenceOptions& o = p.options;
  const ReferenceDtypes& t = p.dtypes;
  const bool nf = opt.no_filters;
  ExactSum scratch;
  std::vector<double> qv(static_cast<size_t>(D)), probs(static_cast<size_t>(C)), e(static_cast<size_t>(C));
  const std::vector<double> ones(static_cast<size_t>(C), 1.0);
  std::vector<float> score(static_cast<size_t>(C));
  std::vector<double> pv_sum(static_cast<size_t>(D)), pv_mag(static_cast<size_t>(D)), pv_err(static_cast<size_t>(D));
  std::vector<std::pair<int64_t, double>> near;  // keys whose cast may flip, and by how much
  for (int64_t j = 0; j < p.q_per_kv; ++j) {
    const int64_t h = g * p.q_per_kv + j;
    for (int64_t r = 0; r < s.q_rows; ++r) {
      const int64_t base = ((s.out_begin + r) * p.num_q_heads + h) * D;
      for (int64_t d = 0; d < D; ++d) qv[d] = q[q_offset(p, s, r, h, d)];
      // Scores: the exact dot rounded to float32 (kernel.py:132), then float32
      // operations, each exact then rounded, as IEEE defines them (:133-143).
      float m = -std::numeric_limits<float>::infinity();
      bool any_nan = false, off_exact = false;
      // Whether every exact score of the row is finite: finite dots, and a
      // finite sm_scale, soft_cap and (on masked keys) mask_value.
      bool exact_scores_finite = std::isfinite(o.sm_scale) && (!o.has_soft_cap || std::isfinite(o.soft_cap));
      for (int64_t c = 0; c < C; ++c) {
        const double* kc = &b.k[c * D];
        const DoubleSum dot = double_dot(qv.data(), kc, D);
        float x = static_cast<float>(exact_dot(DType::kFloat32, qv.data(), kc, D, 1, dot, nf, scratch));
        // The dot of finite q and K passed float32's range where the exact
        // one (a double: |q.k| < 2^128 * 2^128 * D) did not.
        if (std::isinf(x) && std::isfinite(dot.sum)) off_exact = true;
        const bool masked = is_masked(p, s, r, c);
        exact_scores_finite = exact_scores_finite && std::isfinite(dot.sum) && (!masked || std::isfinite(o.mask_value));
        x = x * o.sm_scale;
        if (o.has_soft_cap) x = o.soft_cap * tanh_f32(x / o.soft_cap, nf);
        x = x + (masked ? o.mask_value : 0.0f);
        score[c] = x;
        if (std::isnan(x)) any_nan = true;
        else if (x > m) m = x;
      }
      // Scores this large are spaced 2 or more apart in float32, so its
      // rounding of them (and of s + mask_value, which it may swallow) moves
      // weights by e or more: the reference's softmax is then a different
      // function of the scores than the exact one, not a rounding of it.
      if (std::isfinite(m) && std::fabs(m) >= kFloat32ScoresUnresolved) off_exact = true;
      // The extreme of the same: a float32 score past float32's range (q.k
      // times an sm_scale of 1e36, say, or a masked score below
      // -3.4e38 on a row whose every key is masked) where every exact
      // score is finite. The reference's softmax of the row is then NaN
      // (Inf - Inf), which its cast to an integer V dtype turns into 0
      // (kernel.py:142); the exact softmax is finite.
      if (C > 0 && !std::isfinite(m) && exact_scores_finite) off_exact = true;
      if (any_nan) m = std::numeric_limits<float>::quiet_NaN();
      // Softmax (functions.py:621-624): exp of the float32 difference, the
      // exact sum rounded to float32, a float32 division, the cast to V.
      for (int64_t c = 0; c < C; ++c) e[c] = exp_f32(score[c] - m, nf);
      const float total = static_cast<float>(exact_dot(
          DType::kFloat32, e.data(), ones.data(), C, 1, nf ? DoubleSum{} : double_dot(e.data(), ones.data(), C), nf,
          scratch));
      near.clear();
      for (int64_t c = 0; c < C; ++c) {
        const float pf = static_cast<float>(e[c]) / total;
        probs[c] = convert_value(DType::kFloat32, t.probs, pf);
        if (opt.widen_window_ulps > 0 && std::isfinite(pf)) {
          const double w = opt.widen_window_ulps * ulp_at(DType::kFloat32, pf);
          double alt = 0;
          for (double edge : {double(pf) - w, double(pf) + w}) {
            const double other = convert_value(DType::kFloat32, t.probs, static_cast<float>(edge));
            if (std::isfinite(other)) alt = std::max(alt, std::fabs(other - probs[c]));
          }
          if (alt != 0) near.emplace_back(c, alt);
        }
      }
      // out = einsum(attn, v) rounded once to its result dtype (:145), then
      // .astype(queries.dtype). Double sums per output dim, keys outermost.
      std::fill(pv_sum.begin(), pv_sum.end(), 0.0);
      std::fill(pv_mag.begin(), pv_mag.end(), 0.0);
      std::fill(pv_err.begin(), pv_err.end(), 0.0);
      if (!nf && !t.pv_integer)
        for (int64_t c = 0; c < C; ++c) {
          const double pc = probs[c];
          const double* vc = &b.v[c * D];
          for (int64_t d = 0; d < D; ++d) {  // DoubleSum::add, in arrays
            const double term = pc * vc[d];
            const double sum = pv_sum[d] + term, bp = sum - pv_sum[d];
            pv_err[d] += std::fabs((pv_sum[d] - (sum - bp)) + (term - bp));
            pv_sum[d] = sum;
            pv_mag[d] += std::fabs(term);
          }
        }
      for (int64_t d = 0; d < D; ++d) {
        double x;
        if (t.pv_integer) {
          double sum = 0;  // integer products and sums, exact in double below 2^53
          for (int64_t c = 0; c < C; ++c) sum += probs[c] * b.v[c * D + d];
          x = static_cast<double>(wrap_signed(static_cast<int64_t>(sum), dtype_bits(t.pv)));
        } else {
          DoubleSum filter;
          filter.sum = pv_sum[d], filter.magnitude = pv_mag[d], filter.exact = pv_err[d] == 0, filter.n = C;
          x = exact_dot(t.pv, probs.data(), &b.v[d], C, D, filter, nf, scratch);
        }
        out.values[base + d] = convert_value(t.pv, t.out, static_cast<float>(x));
        double widen = 0;
        for (const auto& [c, alt] : near) widen += alt * std::fabs(b.v[c * D + d]);
        out.widen[base + d] = widen;
        out.scores_off_exact[base + d] = off_exact;
      }
      write_v_abs_max(p, s, b, r, out.v_abs_max + base);
    }
  }
}

// Exact mode for one (sequence, KV head).
void attend_exact(const ReferencePlan& p, const SeqPlan& s, int64_t g, const float* q, const float* kv,
                  Outputs out) {
  const Block b = load_block(p, s, g, kv);
  const int64_t C = b.C, D = b.D;
  const ReferenceOptions& o = p.options;
  const Real sm_scale(o.sm_scale), soft_cap(o.soft_cap), mask(o.mask_value);
  ExactSum scratch;
  std::vector<ExactSum> numerators(static_cast<size_t>(D));
  std::vector<Real> x(static_cast<size_t>(C));
  std::vector<char> masked(static_cast<size_t>(C));
  std::vector<double> qv(static_cast<size_t>(D));
  for (int64_t j = 0; j < p.q_per_kv; ++j) {
    const int64_t h = g * p.q_per_kv + j;
    for (int64_t r = 0; r < s.q_rows; ++r) {
      const int64_t base = ((s.out_begin + r) * p.num_q_heads + h) * D;
      for (int64_t d = 0; d < D; ++d) qv[d] = q[q_offset(p, s, r, h, d)];
      // Scores with the mask kept apart: value_c = x_c + (masked ? mask : 0).
      bool row_nan = false;
      int64_t arg = -1;  // a key of the largest value
      Real best;
      for (int64_t c = 0; c < C; ++c) {
        scratch.clear();
        for (int64_t d = 0; d < D; ++d) scratch.add_product(qv[d], b.k[c * D + d]);
        Real xc = to_real(scratch) * sm_scale;
        if (o.has_soft_cap) xc = soft_cap * boost::multiprecision::tanh(xc / soft_cap);
        masked[c] = is_masked(p, s, r, c);
        x[c] = xc;
        const Real value = masked[c] ? Real(xc + mask) : xc;
        if (boost::multiprecision::isnan(value)) row_nan = true;
        else if (arg < 0 || value > best) best = value, arg = c;
      }
      // jax.nn.softmax's max subtraction: a NaN, a +inf maximum (inf - inf)
      // or an all -inf row gives NaN everywhere, as in the float32 math.
      if (C > 0 && (row_nan || arg < 0 || !boost::multiprecision::isfinite(best))) row_nan = true;
      for (auto& n : numerators) n.clear();
      Real total = 0;
      if (!row_nan) {
        for (int64_t c = 0; c < C; ++c) {
          // (x_c + M_c) - (x_arg + M_arg), each part exact.
          Real diff = x[c] - x[arg];
          if (masked[c] != masked[arg]) diff += masked[c] ? mask : Real(-mask);
          const Real w = boost::multiprecision::exp(diff);
          total += w;
          // w as four doubles: 4 * 53 bits hold all of Real's 168, so the
          // products below (exact in ExactSum) add up to w * v exactly,
          // except for pieces below double's range (< 2^-1022 of w <= 1).
          double piece[4];
          Real rest = w;
          for (double& pc : piece) {
            pc = round_real_to_double(rest);
            rest -= Real(pc);
          }
          for (int64_t d = 0; d < D; ++d) {
            const double vd = b.v[c * D + d];
            if (piece[0] == 0) {
              numerators[d].add_product(0.0, vd);  // 0 * inf and 0 * NaN are NaN, as in the source
              continue;
            }
            for (double pc : piece)
              if (pc != 0) numerators[d].add_product(pc, vd);
          }
        }
      }
      for (int64_t d = 0; d < D; ++d) {
        out.values[base + d] = row_nan ? kNaN : C == 0 ? 0.0 : round_real_to_double(to_real(numerators[d]) / total);
        out.widen[base + d] = 0;
      }
      write_v_abs_max(p, s, b, r, out.v_abs_max + base);
    }
  }
}

}  // namespace

TruthOutput truth_ragged_paged_attention(const CallArgs& a, std::span<const float> q,
                                         std::span<const float> kv_pages, const TruthOptions& options) {
  const ReferencePlan p = plan_reference(a);
  check_contents(a, q, kv_pages);
  TruthOutput out;
  out.rows = p.rows;
  out.num_q_heads = p.num_q_heads;
  out.head_dim = p.head_dim;
  out.diagnostics = p.diagnostics;
  const size_t n = static_cast<size_t>(p.rows * p.num_q_heads * p.head_dim);
  out.values.assign(n, 0.0);
  out.widen.assign(n, 0.0);
  out.v_abs_max.assign(n, 0.0);
  out.scores_off_exact.assign(n, 0);
  const Outputs o{out.values.data(), out.widen.data(), out.v_abs_max.data(), out.scores_off_exact.data()};
  const int64_t items = static_cast<int64_t>(p.seqs.size()) * p.num_kv_heads;
  run_items(items, options.threads, [&](int64_t k) {
    const SeqPlan& s = p.seqs[static_cast<size_t>(k / p.num_kv_heads)];
    const int64_t g = k % p.num_kv_heads;
    if (options.mode == TruthMode::kExact) attend_exact(p, s, g, q.data(), kv_pages.data(), o);
    else attend_rounded(p, s, g, q.data(), kv_pages.data(), options, o);
  });
  return out;
}

}  // namespace rpa
