// Builds the fast kernel's plan: the reference's per-sequence slicing, clamped page indices, skip proofs, work items.
#include "kernels/fast/plan.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "kernels/abi_dtype.h"
#include "kernels/fast/simd_attention.h"

namespace rpa::fast {
namespace {

int32_t wrap32(int64_t x) { return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(x))); }

// Python's slice bound normalisation for x[start:stop] on a length-n axis.
int64_t slice_bound(int64_t x, int64_t n) {
  if (x < 0) return std::max<int64_t>(0, x + n);
  return std::min(x, n);
}

}  // namespace

// Masked keys can be skipped when their weight, relative to the row's
// largest unmasked one, is below e^-150 (far below float32's 2^-149): with
// every score |s| <= S, a masked key weighs at most exp(mask_value + 2S).
// S is |soft_cap| when the cap is on (|cap * tanh(.)| <= |cap|), else
// |sm_scale| * max ||q_row||_1 * max |k| (Hoelder), padded for float32
// rounding of the dot product and of the dequantisation.
// The cap bounds only a score that is not NaN, so the raw bound must hold
// with the cap too: K dequantised past float32's range (int4 K at k_scale
// 3e38) makes q.k Inf - Inf or 0 x Inf, tanh keeps the NaN, and the
// reference's row is NaN however far the key is masked (kernel.py:132-143
// adds mask_value to the score; found by the kernel_diff fuzz target).
bool masked_negligible(const KernelCtx& c, double q1max, double kmax) {
  const double m = c.mask_value;
  if (std::isnan(m)) return false;
  const double raw = raw_score_bound(c, q1max, kmax);
  if (!std::isfinite(raw)) return false;
  const double s = c.has_soft_cap ? std::fabs(double(c.soft_cap)) : raw + 1.0;
  return std::isfinite(s) && m + 2.0 * s < -150.0;
}

namespace {
// A bound on |element| after dequantization of elements up to `absmax`
// (x * scale in float32, then the cast to q's dtype: kernel.py:124-129),
// padded for both roundings (NaN for a NaN scale, so no comparison holds).
double dequantized_max(const KernelCtx& c, double absmax, float scale) {
  return absmax * std::fabs(double(scale)) * (1.0 + 4.0 * unit_roundoff(c.q_dtype) + 1e-6);
}
}  // namespace

double raw_score_bound(const KernelCtx& c, double q1max, double kmax) {
  constexpr double kNone = std::numeric_limits<double>::infinity();
  if (c.has_k_scale) {
    kmax = dequantized_max(c, kmax, c.k_scale);
    if (!(kmax <= max_finite(c.q_dtype))) return kNone;  // the cast to q's dtype could overflow
  }
  // 1.01 covers the float32 rounding of sm_scale's product; head_dim * 2^-23
  // that of a dot product over head_dim terms (and of the L1 norm's sum).
  const double dot = q1max * kmax * (1.01 + double(c.head_dim) * 0x1p-23);
  // q.k is formed in float32 before sm_scale (kernel.py:132-133): where it
  // could pass float32's range, a tiny sm_scale bounds nothing (K near 1e38
  // under sm_scale 1e-40 overflowed an FMA chain to Inf - Inf while the
  // exact scores were below 1; found by the kernel_diff fuzz target).
  if (!(dot < 0x1p127)) return kNone;
  const double s = std::fabs(double(c.sm_scale)) * dot;
  return s >= 0.0 ? s : kNone;  // NaN: no bound
}

float softmax_shift(double num_keys, double vmax) {
  const double bound = num_keys * vmax;
  if (!(bound > 0x1p120) || !std::isfinite(bound)) return 0.0f;
  return static_cast<float>(std::log(bound) - 120.0 * std::log(2.0));
}

bool scores_stay_below(const KernelCtx& c, const SeqPlan& s, double q1max, double limit) {
  return s.k_finite && raw_score_bound(c, q1max, s.kmax) < limit;
}

// The q side of the skip proof over q rows (tokens [t0, t1) of `s`, q heads
// [h0, h1)): every element finite, and masked keys negligible with
// max ||q_row||_1 bounded first by head_dim * max |q| (one integer max per
// element: the bits of |q|, NaN and Inf from 0x7F800000 up; in the SIMD
// code, since this file is built for the baseline ISA), by the exact norms
// only when that bound fails.
bool q_rows_allow_skip(const KernelCtx& c, const SeqPlan& s, double kmax, int64_t t0, int64_t t1, int64_t h0,
                       int64_t h1) {
  const int64_t D = c.head_dim, span = (h1 - h0) * D;
  uint32_t bits = 0;
  for (int64_t t = t0; t < t1; ++t) {
    bits = std::max(bits, max_abs_bits(QHeadRow(c, s, t, h0), span));
  }
  if (bits >= 0x7F800000u) return false;
  const float qmax = std::bit_cast<float>(bits);
  if (masked_negligible(c, double(qmax) * double(D), kmax)) return true;
  double q1max = 0;
  for (int64_t t = t0; t < t1; ++t)
    for (int64_t h = h0; h < h1; ++h) {
      const float* q = QHeadRow(c, s, t, h);
      double a = 0;
      for (int64_t d = 0; d < D; ++d) a += std::fabs(double(q[d]));
      q1max = std::max(q1max, a);
    }
  return masked_negligible(c, q1max, kmax);
}

bool tile_skip_masked(const KernelCtx& c, const SeqPlan& s, int64_t g, int64_t row0, int64_t row1) {
  if (s.skip_masked) return true;
  if (!s.skip_kv || row1 <= row0) return false;
  const int64_t G = c.group, t0 = row0 / G, t1 = (row1 - 1) / G;
  if (nothing_to_skip(c, s, t0, t1)) return false;  // the proof would change nothing: no pass over q
  return q_rows_allow_skip(c, s, s.kmax, t0, t1 + 1, g * G, (g + 1) * G);
}

bool nothing_to_skip(const KernelCtx& c, const SeqPlan& s, int64_t t0, int64_t t1) {
  const RowRange r = tile_key_range(c, s, t0, t1);
  return r.lo <= 0 && r.hi >= s.num_keys - 1;
}

RowRange row_range(const KernelCtx& c, const SeqPlan& s, int64_t t) {
  // q_span = (kv_len - q_len) + iota, mask = q_span < kv_span, and with a
  // window also q_span - sliding_window >= kv_span (kernel.py:133-138), all
  // int32 arithmetic.
  const int32_t q_span = wrap32(int64_t(s.q_span0) + t);
  int64_t hi = std::min<int64_t>(q_span, s.num_keys - 1);
  int64_t lo = 0;
  if (c.has_sliding_window) lo = std::max<int64_t>(0, int64_t(wrap32(int64_t(q_span) - c.sliding_window)) + 1);
  if (lo > hi) {
    if (std::isfinite(c.mask_value)) return {0, s.num_keys - 1};
    return {s.num_keys, -1};  // every key masked, mask_value kept: NaN as in the reference
  }
  return {lo, hi};
}

RowRange tile_key_range(const KernelCtx& c, const SeqPlan& s, int64_t t0, int64_t t1) {
  RowRange u{std::numeric_limits<int64_t>::max(), -1};
  // Fully masked rows (all at the start of a sequence) widen the range to
  // every key; otherwise lo and hi grow with t, so the ends decide.
  for (int64_t t : {t0, t1}) {
    const RowRange r = row_range(c, s, t);
    if (r.lo <= r.hi) u.lo = std::min(u.lo, r.lo), u.hi = std::max(u.hi, r.hi);
  }
  if (u.hi < 0) return {0, -1};
  return u;
}

bool make_plan(const rpa_problem& p, const NativeKv& kv, const PlanShape& shape, bool allow_skip, float* out, Plan& plan,
               std::string& error) {
  KernelCtx& c = plan.ctx;
  c.q_dtype = dtype_of(p.q_dtype);
  c.kv_dtype = kv.dtype;
  c.num_q_heads = p.num_q_heads;
  c.head_dim = p.head_dim;
  c.num_kv_heads = p.num_combined_kv_heads / 2;
  c.group = c.num_kv_heads > 0 ? p.num_q_heads / c.num_kv_heads : 0;
  c.page_size = p.page_size;
  c.num_combined_kv_heads = p.num_combined_kv_heads;
  c.pages_per_seq = p.pages_per_seq;
  c.total_num_pages = p.total_num_pages;
  c.q = p.q;
  c.kv = kv.bytes.data();
  c.kv_elem_bytes = kv.elem_bytes;
  c.kv_slot_bytes = kv.slot_bytes;
  c.sm_scale = p.sm_scale;
  c.has_soft_cap = p.has_soft_cap != 0;
  c.soft_cap = p.soft_cap;
  c.mask_value = p.mask_value;
  c.has_sliding_window = p.has_sliding_window != 0;
  c.sliding_window = p.sliding_window;
  c.has_k_scale = p.has_k_scale != 0;
  c.has_v_scale = p.has_v_scale != 0;
  c.k_scale = p.k_scale;
  c.v_scale = p.v_scale;
  if (has_fp8_bf16_table(c.kv_dtype)) {
    const bool in_table = fp8_scale_in_table(c.q_dtype);
    c.k_fp8 = fp8_bf16_table(c.kv_dtype, in_table && c.has_k_scale, c.k_scale);
    c.v_fp8 = fp8_bf16_table(c.kv_dtype, in_table && c.has_v_scale, c.v_scale);
  }
  c.out = out;

  const int64_t T = p.num_tokens, Hq = p.num_q_heads;
  const int64_t P = p.total_num_pages, ps = p.page_size, pps = p.pages_per_seq;
  const int64_t kv_cap = pps * ps;  // gathered keys before the [:kv_len] cut

  // for i in range(num_seqs[0]) (kernel.py:108); past max_num_seqs the
  // Python reference raises IndexError and the kernel reads past its SMEM.
  int64_t n = std::max<int64_t>(0, p.num_seqs);
  if (n > p.max_num_seqs) {
    plan.diagnostics.push_back("num_seqs=" + std::to_string(p.num_seqs) + " exceeds max_num_seqs=" +
                               std::to_string(p.max_num_seqs) + ": only the first " +
                               std::to_string(p.max_num_seqs) + " sequences are run");
    n = p.max_num_seqs;
  }

  plan.pages.assign(static_cast<size_t>(n * pps), 0);
  int64_t clamped = 0;
  std::string first_clamp;
  int64_t out_row = 0;
  for (int64_t i = 0; i < n; ++i) {
    SeqPlan s;
    const int64_t q_start = p.cu_q_lens[i], q_end = p.cu_q_lens[i + 1];
    s.q_row0 = slice_bound(q_start, T);
    s.num_tokens = std::max<int64_t>(0, slice_bound(q_end, T) - s.q_row0);
    const int32_t q_len = wrap32(q_end - q_start);
    const int32_t kv_len = p.kv_lens[i];
    s.num_keys = kv_len >= 0 ? std::min<int64_t>(kv_len, kv_cap) : std::max<int64_t>(0, kv_cap + kv_len);
    s.q_span0 = wrap32(int64_t(kv_len) - q_len);
    s.out_row0 = out_row;
    s.page_row = i;
    if (out_row + s.num_tokens > T) {
      plan.diagnostics.push_back("sequence " + std::to_string(i) +
                                 ": the concatenated output overruns the q buffer; its rows past row " +
                                 std::to_string(T) + " are dropped");
      s.num_tokens = std::max<int64_t>(0, T - out_row);
    }
    out_row += s.num_tokens;
    if (s.num_keys > 0 && P == 0) {
      error = "sequence " + std::to_string(i) + " has keys but kv_pages has no pages";
      return false;
    }
    // kv_pages[indices]: JAX wraps a negative index once and clamps the rest
    // (the upstream test pads page_indices with NaN cast to int32).
    const int64_t used_pages = (s.num_keys + ps - 1) / std::max<int64_t>(ps, 1);
    for (int64_t k = 0; k < pps; ++k) {
      const int64_t raw = p.page_indices[i * pps + k];
      int64_t idx = raw < 0 ? raw + P : raw;
      idx = std::clamp<int64_t>(idx, 0, std::max<int64_t>(P - 1, 0));
      if (idx != raw && k < used_pages) {
        if (clamped++ == 0)
          first_clamp = "page_indices[" + std::to_string(i) + "][" + std::to_string(k) + "]=" +
                        std::to_string(raw) + " -> page " + std::to_string(idx);
      }
      plan.pages[i * pps + k] = static_cast<int32_t>(idx);
    }

    // Skip proof, KV side: the sequence's K and V statistics (kept with the cache).
    // Page by page: a page's slots are contiguous in the statistics.
    // The largest |K| and |V| as bits (the statistics are non-negative and
    // finite, so integer order is float order): max_abs_bits keeps them in
    // registers, where float maxima through std::max were spilled and
    // reloaded per slot (23 us of the bench's 0.5 ms decode call).
    uint8_t nonfinite = 0;
    uint32_t kbits = 0, vbits = 0;
    for (int64_t j0 = 0; j0 < s.num_keys; j0 += ps) {
      const int64_t base = int64_t(plan.pages[i * pps + j0 / ps]) * ps;
      const int64_t n_slots = std::min(ps, s.num_keys - j0);
      for (int64_t k = 0; k < n_slots; ++k) nonfinite |= kv.nonfinite[size_t(base + k)];
      kbits = std::max(kbits, max_abs_bits(kv.k_absmax.data() + base, n_slots));
      vbits = std::max(vbits, max_abs_bits(kv.v_absmax.data() + base, n_slots));
    }
    const float kmax_f = std::bit_cast<float>(kbits), vmax_f = std::bit_cast<float>(vbits);
    const bool finite = nonfinite == 0;
    // V side: with v_scale a finite V element can dequantize to Inf
    // (kernel.py:128-129 casts v * v_scale to q's dtype), and a masked key's
    // weight of exactly 0 times Inf is NaN in the reference's p.v einsum
    // (kernel.py:145): such a sequence is computed in full too. (The K side
    // is in raw_score_bound.) vmax_deq also sizes the softmax's p_shift.
    const double vmax_deq = c.has_v_scale ? dequantized_max(c, vmax_f, c.v_scale) : double(vmax_f);
    const bool v_dequant_finite = !c.has_v_scale || vmax_deq <= max_finite(c.q_dtype);
    const double kmax = kmax_f;
    // Tiles find their keys from their first and last rows, which needs the
    // ranges to move monotonically: no int32 wraparound in q_span (or in
    // q_span - sliding_window) over the sequence.
    const bool monotone = int64_t(s.q_span0) + s.num_tokens <= std::numeric_limits<int32_t>::max() &&
                          (!c.has_sliding_window ||
                           int64_t(s.q_span0) - c.sliding_window >= std::numeric_limits<int32_t>::min());
    s.skip_kv = allow_skip && finite && v_dequant_finite && monotone;
    s.kmax = kmax;
    s.k_finite = finite;
    s.p_shift = softmax_shift(double(s.num_keys), std::min(vmax_deq, max_finite(c.q_dtype)));
    // The q side: here for the few rows of a group sequence (its key chunks
    // are planned from the result); a tile proves its own rows while it has
    // them in cache (tile_skip_masked), so q is not read twice per call.
    const int64_t rows = s.num_tokens * c.group;
    if (s.skip_kv && rows > 0 && rows <= shape.group_rows && !nothing_to_skip(c, s, 0, s.num_tokens - 1))
      s.skip_masked = q_rows_allow_skip(c, s, kmax, 0, s.num_tokens, 0, Hq);
    plan.seqs.push_back(s);
  }
  if (clamped > 0)
    plan.diagnostics.push_back(std::to_string(clamped) +
                               " page index(es) of attended pages outside [0, total_num_pages) clamped as JAX "
                               "indexing does (the TPU kernel reads whatever page that is); first: " +
                               first_clamp);
  plan.rows_written = out_row;
  c.pages = plan.pages.data();

  // Work items. Few rows per KV head (decode): group items over several KV
  // heads, long key ranges split into chunks so every thread gets work.
  // Otherwise tiles of shape.tile_rows rows of one KV head.
  const int64_t G = c.group;
  const auto group_keys = [&](const SeqPlan& s) {
    RowRange kr{0, s.num_keys - 1};
    if (s.skip_masked) kr = tile_key_range(c, s, 0, s.num_tokens - 1);
    return kr;
  };
  // Chunks no shorter than split_keys, nor than a share of all group keys
  // that leaves each thread about two items: a split costs a merge pass over
  // its rows after the parallel part, and with few threads the unsplit
  // sequences balance on their own (most expensive first).
  int64_t all_group_keys = 0;
  for (const SeqPlan& s : plan.seqs) {
    const int64_t rows = s.num_tokens * G;
    if (rows == 0 || rows > shape.group_rows) continue;
    const RowRange kr = group_keys(s);
    all_group_keys += std::max<int64_t>(0, kr.hi - kr.lo + 1);
  }
  const int64_t head_blocks = shape.group_heads > 0 ? (c.num_kv_heads + shape.group_heads - 1) / shape.group_heads : 1;
  const int64_t chunk_keys =
      std::max<int64_t>(shape.split_keys, all_group_keys * head_blocks / (2 * std::max(1, shape.threads)));
  for (int64_t i = 0; i < n; ++i) {
    const SeqPlan& s = plan.seqs[i];
    const int64_t rows = s.num_tokens * G;
    if (rows == 0) continue;
    if (rows <= shape.group_rows) {
      const RowRange kr = group_keys(s);
      const int64_t keys = std::max<int64_t>(0, kr.hi - kr.lo + 1);
      const int64_t chunks = std::max<int64_t>(1, (keys + chunk_keys / 2) / chunk_keys);
      // Chunk boundaries on block multiples from the range start.
      const int64_t per = (keys + chunks - 1) / chunks;
      const int64_t step = std::max<int64_t>(32, (per + 31) / 32 * 32);
      for (int64_t h0 = 0; h0 < c.num_kv_heads; h0 += shape.group_heads) {
        const int64_t nh = std::min(shape.group_heads, c.num_kv_heads - h0);
        SplitRun split{int32_t(i), int32_t(h0), int32_t(nh), {}};
        for (int64_t k0 = kr.lo; k0 <= std::max(kr.hi, kr.lo); k0 += step) {
          WorkItem w;
          w.seq = int32_t(i);
          w.kv_head = int32_t(h0);
          w.heads = int32_t(nh);
          w.group = true;
          w.row0 = 0;
          w.row1 = rows;
          w.key0 = k0;
          w.key1 = std::min(kr.hi, k0 + step - 1);
          if (chunks > 1) {
            w.partial = int64_t(plan.partials.size());
            plan.partials.resize(plan.partials.size() + size_t(nh * rows * (2 + c.head_dim)));
            split.partials.push_back(w.partial);
          }
          w.cost = double(nh) * double(rows + 8) * double(std::max<int64_t>(0, w.key1 - w.key0 + 1) + 8);
          plan.items.push_back(w);
        }
        if (chunks > 1) plan.splits.push_back(std::move(split));
      }
      continue;
    }
    for (int64_t g = 0; g < c.num_kv_heads; ++g) {
      for (int64_t r0 = 0; r0 < rows; r0 += shape.tile_rows) {
        WorkItem w;
        w.seq = static_cast<int32_t>(i);
        w.kv_head = static_cast<int32_t>(g);
        w.row0 = r0;
        w.row1 = std::min(rows, r0 + shape.tile_rows);
        RowRange kr{0, s.num_keys - 1};  // the estimate assumes the tile's q side proof holds
        if (s.skip_kv) kr = tile_key_range(c, s, w.row0 / G, (w.row1 - 1) / G);
        w.cost = double(w.row1 - w.row0 + 8) * double(std::max<int64_t>(0, kr.hi - kr.lo + 1) + 8);
        plan.items.push_back(w);
      }
    }
  }
  // The queue: the items of one (sequence, KV head) next to each other,
  // these groups most expensive first, and within one its items most
  // expensive first. The threads then work on the same K/V at about the
  // same time, and a KV head's keys stay in L3 between its tiles instead of
  // coming from memory again for each (the float32 prefill's K/V is 50 MB,
  // more than this machine's L3); the queue still ends in small items.
  // Against items ordered by their own cost alone: prefill float32 20.3 vs
  // 22.1 ms, mixed float32 13.4 vs 15.5 ms (cold, medians of 5 interleaved
  // fast_bench runs).
  std::vector<double> kv_cost(plan.seqs.size() * size_t(c.num_kv_heads), 0.0);
  const auto kv_index = [&](const WorkItem& w) { return size_t(w.seq) * size_t(c.num_kv_heads) + size_t(w.kv_head); };
  for (const WorkItem& w : plan.items) kv_cost[kv_index(w)] += w.cost;
  std::stable_sort(plan.items.begin(), plan.items.end(), [&](const WorkItem& a, const WorkItem& b) {
    const size_t ia = kv_index(a), ib = kv_index(b);
    if (kv_cost[ia] != kv_cost[ib]) return kv_cost[ia] > kv_cost[ib];
    if (ia != ib) return ia < ib;
    return a.cost > b.cost;
  });
  return true;
}

void merge_partials(const Plan& plan) {
  const KernelCtx& c = plan.ctx;
  const int64_t D = c.head_dim, G = c.group;
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  std::vector<double> acc(static_cast<size_t>(D));
  for (const SplitRun& sp : plan.splits) {
    const SeqPlan& s = plan.seqs[sp.seq];
    const int64_t rows = s.num_tokens * G;
    for (int64_t h = 0; h < sp.heads; ++h) {
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t at = (h * rows + r) * (2 + D);
        // The largest running max; NaN in any chunk makes the row NaN.
        float mmax = kNegInf;
        bool nan = false;
        for (int64_t off : sp.partials) {
          const float m = plan.partials[size_t(off + at)];
          nan = nan || std::isnan(m);
          mmax = std::max(mmax, m);
        }
        // Each chunk's O and l are relative to its own max (0 where that is -inf).
        double l = 0;
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t off : sp.partials) {
          const float* part = plan.partials.data() + off + at;
          const float m_use = part[0] == kNegInf ? 0.0f : part[0];
          const float m_ref = mmax == kNegInf ? 0.0f : mmax;
          const double w = (part[0] == kNegInf && mmax != kNegInf) ? 0.0 : std::exp(double(m_use) - double(m_ref));
          l += w * part[1];
          for (int64_t d = 0; d < D; ++d) acc[size_t(d)] += w == 0.0 ? 0.0 * part[2 + d] : w * part[2 + d];
        }
        const int64_t t = r / G, qh = (sp.kv_head + h) * G + r % G;
        float* dst = OutHeadRow(c, s, t, qh);
        for (int64_t d = 0; d < D; ++d)
          dst[d] = nan ? std::numeric_limits<float>::quiet_NaN()
                       : s.num_keys == 0 ? 0.0f : static_cast<float>(acc[size_t(d)] / l);
        round_values(c.q_dtype, dst, D, dst);
      }
    }
  }
}

}  // namespace rpa::fast
