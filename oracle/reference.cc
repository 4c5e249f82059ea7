// The float32 reference attention, following ref_ragged_paged_attention line by line (kernel.py:111-148).
#include "oracle/reference.h"

#include <cmath>
#include <limits>
#include <stdexcept>

#include "oracle/correct_math.h"
#include "oracle/einsum_dtypes.h"
#include "oracle/reference_plan.h"
#include "oracle/work_split.h"

namespace rpa {
namespace {

// A double sum of n exact products (total magnitude `magnitude`) rounded
// to float32 as their exact sum would be: where double's own rounding
// could reach the float32 result (cancellation among huge terms, K or V
// near 1e38 with a small result), the products are summed exactly.
float round_dot_f32(double sum, double magnitude, int64_t n, const double* a, const double* b, int64_t stride,
                    ExactSum& scratch) {
  DoubleSum filter;
  filter.sum = sum, filter.magnitude = magnitude, filter.n = n, filter.exact = false;
  return static_cast<float>(exact_dot(DType::kFloat32, a, b, n, stride, filter, /*no_filters=*/false, scratch));
}

// sum_d a[d] * b[d] rounded to float32 (kernel.py:132: the einsum rounded
// once). `magnitude` bounds sum_d |a[d] b[d]| (the caller's ||a||_1 max|b|:
// a bound serves certain_rounding as well as the sum itself, and costs
// nothing per product).
float dot_f32(const double* a, const double* b, int64_t n, double magnitude, ExactSum& scratch) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int64_t d = 0;
  for (; d + 4 <= n; d += 4) {
    s0 += a[d] * b[d];
    s1 += a[d + 1] * b[d + 1];
    s2 += a[d + 2] * b[d + 2];
    s3 += a[d + 3] * b[d + 3];
  }
  for (; d < n; ++d) s0 += a[d] * b[d];
  return round_dot_f32((s0 + s1) + (s2 + s3), magnitude, n, a, b, 1, scratch);
}

// max_d |x[c * n + d]| for each of the m rows c.
std::vector<double> row_abs_max(const std::vector<double>& x, int64_t m, int64_t n) {
  std::vector<double> out(static_cast<size_t>(m), 0.0);
  for (int64_t c = 0; c < m; ++c)
    for (int64_t d = 0; d < n; ++d) out[c] = std::max(out[c], std::fabs(x[c * n + d]));
  return out;
}

// One (sequence, KV head): every q head of the group and every query row.
void attend(const ReferencePlan& p, const SeqPlan& s, int64_t g, const float* q, const float* kv, float* out) {
  const int64_t D = p.head_dim, C = s.kv_rows;
  const ReferenceOptions& o = p.options;
  const ReferenceDtypes& t = p.dtypes;
  std::vector<double> k(static_cast<size_t>(C * D)), v(static_cast<size_t>(C * D));
  for (int64_t c = 0; c < C; ++c)
    for (int64_t d = 0; d < D; ++d) {
      k[c * D + d] = dequantised_kv(p, s, kv, true, c, g, d);
      v[c * D + d] = dequantised_kv(p, s, kv, false, c, g, d);
    }
  // Bounds of the products' magnitudes for round_dot_f32: ||q||_1 max|K|
  // per key, sum|p| max|V| per dim; the factor 1 + 2^-30 covers the double
  // rounding of the sums and products that form them.
  const std::vector<double> k_max = row_abs_max(k, C, D);
  std::vector<double> v_max(static_cast<size_t>(D), 0.0);
  for (int64_t c = 0; c < C; ++c)
    for (int64_t d = 0; d < D; ++d) v_max[d] = std::max(v_max[d], std::fabs(v[c * D + d]));
  std::vector<double> qv(static_cast<size_t>(D)), acc(static_cast<size_t>(D));
  std::vector<double> prob_d(static_cast<size_t>(C));
  ExactSum scratch;
  std::vector<float> score(static_cast<size_t>(C)), prob(static_cast<size_t>(C));
  for (int64_t j = 0; j < p.q_per_kv; ++j) {
    const int64_t h = g * p.q_per_kv + j;  // jnp.repeat(k, num_query_per_kv, axis=1) (kernel.py:130)
    for (int64_t r = 0; r < s.q_rows; ++r) {
      double q_l1 = 0;
      for (int64_t d = 0; d < D; ++d) qv[d] = q[q_offset(p, s, r, h, d)], q_l1 += std::fabs(qv[d]);
      float m = -std::numeric_limits<float>::infinity();
      bool any_nan = false;
      for (int64_t c = 0; c < C; ++c) {
        float x = dot_f32(qv.data(), &k[c * D], D, q_l1 * k_max[c] * (1 + 0x1p-30), scratch);  // kernel.py:132
        x = x * o.sm_scale;                                         // :133
        if (o.has_soft_cap) x = o.soft_cap * tanh_f32_correct(x / o.soft_cap);  // :141-142
        x = x + (is_masked(p, s, r, c) ? o.mask_value : 0.0f);      // :134-140, 143
        score[c] = x;
        if (std::isnan(x)) any_nan = true;
        else if (x > m) m = x;
      }
      // jax.nn.softmax (functions.py:621-624): a NaN score makes the whole
      // row NaN whichever way the max treats it (exp(NaN - m) enters the sum).
      if (any_nan) m = std::numeric_limits<float>::quiet_NaN();
      double total = 0;
      for (int64_t c = 0; c < C; ++c) {
        prob[c] = exp_f32_correct(score[c] - m);
        total += prob[c];
      }
      const float denominator = static_cast<float>(total);
      for (int64_t c = 0; c < C; ++c)
        prob[c] = convert_value(DType::kFloat32, t.probs, prob[c] / denominator);  // .astype(v.dtype) :144
      // out = einsum("hqk,khd->qhd", attn, v) (:145) rounded once: in double
      // (products exact; integer sums exact below 2^53), exactly where
      // double's rounding could reach the float32 result (round_dot_f32).
      std::fill(acc.begin(), acc.end(), 0.0);
      double p_sum = 0;
      for (int64_t c = 0; c < C; ++c) {
        const double pc = prob[c];
        const double* vc = &v[c * D];
        for (int64_t d = 0; d < D; ++d) acc[d] += pc * vc[d];
        prob_d[c] = pc;
        p_sum += std::fabs(pc);
      }
      float* o_row = out + ((s.out_begin + r) * p.num_q_heads + h) * D;
      for (int64_t d = 0; d < D; ++d) {
        float x;
        if (t.pv_integer) {
          x = static_cast<float>(wrap_signed(static_cast<int64_t>(acc[d]), dtype_bits(t.pv)));
        } else {
          // No keys (kv_len 0): v is empty and v[d] would bind a reference to nothing.
          const double* v_d = C > 0 ? v.data() + d : nullptr;
          x = round_dot_f32(acc[d], p_sum * v_max[d] * (1 + 0x1p-30), C, prob_d.data(), v_d, D, scratch);
          for (int step = 1; step < t.pv_chain_length; ++step) x = round_to(t.pv_chain[step], x);
        }
        o_row[d] = convert_value(t.pv, t.out, x);  // .astype(queries.dtype) :145
      }
    }
  }
}

}  // namespace

AttentionOutput ref_ragged_paged_attention(const CallArgs& a, std::span<const float> q,
                                           std::span<const float> kv_pages, int threads) {
  const ReferencePlan p = plan_reference(a);
  check_contents(a, q, kv_pages);
  AttentionOutput out;
  out.rows = p.rows;
  out.num_q_heads = p.num_q_heads;
  out.head_dim = p.head_dim;
  out.diagnostics = p.diagnostics;
  out.values.assign(static_cast<size_t>(p.rows * p.num_q_heads * p.head_dim), 0.0f);
  const int64_t items = static_cast<int64_t>(p.seqs.size()) * p.num_kv_heads;
  run_items(items, threads, [&](int64_t k) {
    attend(p, p.seqs[static_cast<size_t>(k / p.num_kv_heads)], k % p.num_kv_heads, q.data(), kv_pages.data(),
           out.values.data());
  });
  return out;
}

}  // namespace rpa
