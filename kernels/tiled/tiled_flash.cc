// The flash_attention step of the tiled emulation: f32 arithmetic in the kernel's order, dots as exact products summed wide.
#include "kernels/tiled/tiled_flash.h"

#include <algorithm>
#include <cmath>
#include <limits>

// Every f32 operation below is one jnp operation, rounded on its own; fusing
// a multiply and an add would change the kernel's rounding.
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace rpa::tiled {
namespace {

// jnp.maximum and jnp.max propagate NaN (std::max does not).
inline float nan_max(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<float>::quiet_NaN();
  return a > b ? a : b;
}

// A dot with preferred_element_type=float32: every product of two values
// of at most 24 significant bits is exact in double, and the sum is carried
// in double and rounded once to float32. The MXU accumulates in (at least)
// f32 in an undocumented order; this takes the accurate limit of it.
// The summation order is fixed per (row, key), so results do not depend on
// how rows or heads are blocked.
inline double dot_exact(const double* a, const double* b, int64_t n) {
  double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) s[j] += a[i + j] * b[i + j];
  for (; i < n; ++i) s[0] += a[i] * b[i];
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

// expf of anything below -200 is +0 (e^-200 is far below half the smallest
// subnormal); skipping the call avoids libm's slow underflow path for the
// masked scores near mask_value. NaN still goes to expf.
inline float exp_f32(float x) { return x < -200.0f ? 0.0f : std::exp(x); }

}  // namespace

StoreRange store_range(const Geometry& g, const FlashScalars& s) {
  return {std::max<int64_t>(s.q_start - s.q_len_start, 0), std::min<int64_t>(s.q_end - s.q_len_start, g.num_q_per_blk)};
}

// Compiled for several x86 vector widths (the lanes above are independent
// IEEE double operations, so every clone gives the same bits).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
void flash_attention(const Geometry& g, const FlashOptions& o, const FlashScalars& s, const FlashRefs& r,
                     FlashWork& work, FlashStats& stats) {
  const int64_t n_kv = g.num_kv_per_blk, d = g.head_dim, group = g.num_q_heads_per_kv_head;
  const int64_t kv_len_start = s.kv_blk_idx * n_kv;  // kernel.py:490
  const bool first_blk = s.kv_blk_idx == 0;         // load_with_init, kernel.py:496-499

  // kv_mask (kernel.py:502-506): rows at or past kv_len become 0, which also
  // removes NaN there from the contraction.
  const int64_t valid = std::clamp<int64_t>(s.kv_len - kv_len_start, 0, n_kv);
  std::fill(r.k + valid * d, r.k + n_kv * d, 0.0f);
  std::fill(r.v + valid * d, r.v + n_kv * d, 0.0f);

  const StoreRange st = store_range(g, s);
  const int64_t row_lo = std::max<int64_t>(st.start, 0), row_hi = std::min<int64_t>(st.end, g.rows_alloc);
  if (row_hi <= row_lo) return;

  work.scores.resize(size_t(n_kv));
  work.pv.resize(size_t(d));
  work.qd.resize(size_t(d));
  work.kd.resize(size_t(n_kv * d));
  work.vd.resize(size_t(n_kv * d));
  float* qk = work.scores.data();
  double* pv = work.pv.data();
  double* qd = work.qd.data();
  double* kd = work.kd.data();
  double* vd = work.vd.data();
  for (int64_t i = 0; i < n_kv * d; ++i) kd[i] = r.k[i], vd[i] = r.v[i];
  const float neg_inf = -std::numeric_limits<float>::infinity();

  for (int64_t qi = row_lo; qi < row_hi; ++qi) {
    // row_ids (kernel.py:515-525): the causal position of q row qi.
    const int64_t row_id = (s.kv_len - s.q_len) + s.q_len_start - s.q_start + qi;
    bool row_weights_padding = false, row_overflows = false;
    for (int64_t gi = 0; gi < group; ++gi) {
      const int64_t rr = qi * group + gi;
      for (int64_t c = 0; c < d; ++c) qd[c] = r.q[rr * d + c];
      // qk = einsum(q, k, f32) * sm_scale; soft cap; += where(mask, mask_value, 0).
      for (int64_t t = 0; t < n_kv; ++t) {
        float x = float(dot_exact(qd, kd + t * d, d)) * o.sm_scale;
        if (o.has_soft_cap) x = o.soft_cap * std::tanh(x / o.soft_cap);
        const int64_t col_id = kv_len_start + t;
        bool masked = row_id < col_id;
        if (o.has_sliding_window) masked = masked || (row_id - o.sliding_window >= col_id);
        qk[t] = x + (masked ? o.mask_value : 0.0f);
      }
      float m_curr = qk[0];
      for (int64_t t = 1; t < n_kv; ++t) m_curr = nan_max(m_curr, qk[t]);
      // s_curr = exp(qk - m_curr); l_curr = s_curr.sum(1); qkv = dot(s_curr, v).
      double l_sum = 0;
      std::fill(pv, pv + d, 0.0);
      for (int64_t t = 0; t < n_kv; ++t) {
        const float p = exp_f32(qk[t] - m_curr);
        qk[t] = p;
        l_sum += double(p);
        const double pd = p;
        const double* vr = vd + t * d;
        for (int64_t c = 0; c < d; ++c) pv[c] += pd * vr[c];
      }
      const float l_curr = float(l_sum);

      float* m_row = r.m + rr * kLmLanes;
      float* l_row = r.l + rr * kLmLanes;
      // Every store writes a whole broadcast row, so the 128 lanes of a row
      // are always equal: one lane's arithmetic stands for all of them, and
      // broadcast_to_shape (kernel.py:565-579) reads lane d % 128.
      const float m_prev = first_blk ? neg_inf : m_row[0];
      const float l_prev = first_blk ? 0.0f : l_row[0];
      const float m_next = nan_max(m_prev, m_curr);
      std::fill(m_row, m_row + kLmLanes, m_next);
      const float alpha = exp_f32(m_prev - m_next);
      const float beta = exp_f32(m_curr - m_next);
      const float l_alpha = alpha * l_prev;
      const float beta_l = beta * l_curr;
      const float l_next = l_alpha + beta_l;
      const float l_next_safe = l_next == 0.0f ? 1.0f : l_next;
      std::fill(l_row, l_row + kLmLanes, l_next_safe);

      float* acc = r.acc + qi * r.acc_row_stride + gi * d;
      for (int64_t c = 0; c < d; ++c) {
        const float o_curr = first_blk ? 0.0f : acc[c];
        const float a = l_alpha * o_curr;
        const float b = beta * float(pv[c]);
        acc[c] = (a + b) / l_next_safe;
        if (!std::isfinite(acc[c]) && std::isfinite(o_curr) && std::isfinite(l_alpha) && std::isfinite(beta) &&
            std::isfinite(pv[c]))
          row_overflows = true;
      }

      if (valid < n_kv) {
        float pad = 0.0f;
        for (int64_t t = valid; t < n_kv; ++t) pad += qk[t];
        if (beta * pad > 0.0f) row_weights_padding = true;
      }
    }
    if (row_overflows) stats.pv_overflow.add(qi);
    if (row_weights_padding) stats.padding_weighted.add(qi);
  }
  stats.multiply_adds += double(row_hi - row_lo) * double(group) * double(n_kv) * double(d) * 2.0;
}

}  // namespace rpa::tiled
