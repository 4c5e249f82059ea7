// Test support for the tiled emulation: random ragged problems as plain buffers, and a float64 attention written from the Python source.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/abi_dtype.h"
#include "kernels/tiled/tiled_attention.h"
#include "oracle/dtype.h"
#include "rpa/rpa.h"

namespace rpa::tiled::testing {

struct SeqLen {
  int64_t q_len = 0, kv_len = 0;
};

struct Spec {
  DType q_dtype = DType::kFloat32, kv_dtype = DType::kFloat32;
  int64_t num_q_heads = 4, num_kv_heads = 2, head_dim = 8, page_size = 4;
  std::vector<SeqLen> seqs;
  int64_t extra_tokens = 0;       // q rows past cu_q_lens[num_seqs]
  int64_t extra_seqs = 0;         // page-table rows past num_seqs
  int64_t extra_page_columns = 0; // page-table columns past the longest sequence
  float sm_scale = 1.0f;
  bool has_sliding_window = false;
  int64_t sliding_window = 0;
  bool has_soft_cap = false;
  float soft_cap = 0;
  float mask_value = static_cast<float>(-0.7 * double(std::numeric_limits<float>::max()));
  bool has_k_scale = false, has_v_scale = false;
  float k_scale = 1, v_scale = 1;
  float value_range = 1.0f;  // float q/KV drawn from [-range, range]
};

// A problem whose buffers it owns. Pages are shuffled; slots past kv_len,
// spare pages and q rows past cu_q_lens[num_seqs] hold poison (NaN, or the
// dtype's largest value when it has no NaN); page-table entries nothing
// should read are out-of-range garbage.
struct Problem {
  Spec spec;
  int64_t num_tokens = 0, total_num_pages = 0, pages_per_seq = 0, max_num_seqs = 0;
  std::vector<float> q, kv;
  std::vector<int32_t> kv_lens, page_indices, cu_q_lens;
  int32_t num_seqs = 0;
  int64_t num_kv_pages_per_block = 1, num_queries_per_block = 1;
  int32_t num_threads = 0;

  int64_t hc() const { return 2 * spec.num_kv_heads; }
  // Combined head 2 * kvh holds K, 2 * kvh + 1 holds V (kernel.py:118-123).
  size_t kv_index(int64_t page, int64_t slot, int64_t combined, int64_t d) const {
    return size_t(((page * spec.page_size + slot) * hc() + combined) * spec.head_dim + d);
  }
  float k_at(int64_t page, int64_t slot, int64_t kvh, int64_t d) const { return kv[kv_index(page, slot, 2 * kvh, d)]; }
  float v_at(int64_t page, int64_t slot, int64_t kvh, int64_t d) const { return kv[kv_index(page, slot, 2 * kvh + 1, d)]; }

  rpa_problem view() const {
    rpa_problem p{};
    p.abi_version = RPA_ABI_VERSION;
    p.q_dtype = abi_dtype_of(spec.q_dtype);
    p.kv_dtype = abi_dtype_of(spec.kv_dtype);
    p.num_tokens = num_tokens;
    p.num_q_heads = spec.num_q_heads;
    p.head_dim = spec.head_dim;
    p.total_num_pages = total_num_pages;
    p.page_size = spec.page_size;
    p.num_combined_kv_heads = hc();
    p.max_num_seqs = max_num_seqs;
    p.pages_per_seq = pages_per_seq;
    p.q = q.data();
    p.kv_pages = kv.data();
    p.kv_lens = kv_lens.data();
    p.page_indices = page_indices.data();
    p.cu_q_lens = cu_q_lens.data();
    p.num_seqs = num_seqs;
    p.sm_scale = spec.sm_scale;
    p.has_sliding_window = spec.has_sliding_window;
    p.sliding_window = spec.sliding_window;
    p.has_soft_cap = spec.has_soft_cap;
    p.soft_cap = spec.soft_cap;
    p.mask_value = spec.mask_value;
    p.has_k_scale = spec.has_k_scale;
    p.k_scale = spec.k_scale;
    p.has_v_scale = spec.has_v_scale;
    p.v_scale = spec.v_scale;
    p.num_kv_pages_per_block = num_kv_pages_per_block;
    p.num_queries_per_block = num_queries_per_block;
    p.num_threads = num_threads;
    return p;
  }
};

inline float poison_of(DType d) {
  return dtype_info(d).kind == DTypeKind::kFloat ? std::numeric_limits<float>::quiet_NaN() : float(max_finite(d));
}

inline float random_value(DType d, float range, std::mt19937_64& rng) {
  if (dtype_info(d).kind == DTypeKind::kSignedInt) {
    const int lo = d == DType::kInt4 ? -8 : -128, hi = d == DType::kInt4 ? 7 : 127;
    return float(std::uniform_int_distribution<int>(lo, hi)(rng));
  }
  return round_to(d, std::uniform_real_distribution<float>(-range, range)(rng));
}

inline int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

inline Problem make_problem(const Spec& s, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Problem p;
  p.spec = s;
  p.num_seqs = int32_t(s.seqs.size());
  p.max_num_seqs = int64_t(s.seqs.size()) + s.extra_seqs;
  int64_t total_q = 0, used_pages = 0, widest = 1;
  for (const auto& q : s.seqs) {
    total_q += q.q_len;
    used_pages += cdiv(q.kv_len, s.page_size);
    widest = std::max(widest, cdiv(q.kv_len, s.page_size));
  }
  p.num_tokens = total_q + s.extra_tokens;
  p.pages_per_seq = widest + s.extra_page_columns;
  p.total_num_pages = used_pages + 2;  // two spare, poisoned pages
  const float q_poison = poison_of(s.q_dtype), kv_poison = poison_of(s.kv_dtype);
  p.q.assign(size_t(p.num_tokens * s.num_q_heads * s.head_dim), q_poison);
  for (int64_t i = 0; i < total_q * s.num_q_heads * s.head_dim; ++i) p.q[size_t(i)] = random_value(s.q_dtype, s.value_range, rng);
  p.kv.assign(size_t(p.total_num_pages * s.page_size * p.hc() * s.head_dim), kv_poison);
  std::vector<int32_t> perm(size_t(p.total_num_pages));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  p.page_indices.assign(size_t(p.max_num_seqs * p.pages_per_seq), 0);
  p.kv_lens.assign(size_t(p.max_num_seqs), 0);
  p.cu_q_lens.assign(size_t(p.max_num_seqs + 1), 0);
  int64_t next_page = 0, cu = 0;
  for (size_t i = 0; i < s.seqs.size(); ++i) {
    p.kv_lens[i] = int32_t(s.seqs[i].kv_len);
    p.cu_q_lens[i] = int32_t(cu);
    cu += s.seqs[i].q_len;
    const int64_t pages = cdiv(s.seqs[i].kv_len, s.page_size);
    for (int64_t c = 0; c < p.pages_per_seq; ++c) {
      int32_t& e = p.page_indices[size_t(int64_t(i) * p.pages_per_seq + c)];
      if (c >= pages) {
        e = 1000000 + int32_t(c);  // never read: the kernel clamps to column 0
        continue;
      }
      e = perm[size_t(next_page++)];
      for (int64_t slot = 0; slot < s.page_size && c * s.page_size + slot < s.seqs[i].kv_len; ++slot)
        for (int64_t h = 0; h < p.hc(); ++h)
          for (int64_t d = 0; d < s.head_dim; ++d)
            p.kv[p.kv_index(e, slot, h, d)] = random_value(s.kv_dtype, s.value_range, rng);
    }
  }
  for (int64_t i = int64_t(s.seqs.size()); i <= p.max_num_seqs; ++i) p.cu_q_lens[size_t(i)] = int32_t(cu);
  return p;
}

// ref_ragged_paged_attention (kernel.py:73-148) in float64, written from the
// Python source: per sequence, keys 0..kv_len-1 through the page table,
// dequantised with the same rounding (astype(f32) * scale, astype(q dtype)),
// causal mask aligned to the end of the sequence, optional sliding window and
// soft cap, mask_value added where masked, softmax and p.v in float64, no
// rounding of probabilities. `pad_slots_per_seq[i]` extra keys with score
// exactly mask_value and V = 0 model the kernel's zeroed slots (for the
// known-divergence test). Also returns, per output element, max |V| over
// the keys its row attends.
struct Truth {
  std::vector<double> out, max_abs_v;
  double max_abs_out = 0;
};

inline Truth attention_f64(const Problem& p, const std::vector<int64_t>& pad_slots_per_seq = {}) {
  const Spec& s = p.spec;
  const int64_t ratio = s.num_q_heads / s.num_kv_heads, d = s.head_dim;
  Truth t;
  const int64_t rows = p.cu_q_lens[size_t(p.num_seqs)];
  t.out.assign(size_t(rows * s.num_q_heads * d), 0.0);
  t.max_abs_v.assign(t.out.size(), 0.0);
  auto dequant = [&](float x, bool has, float scale) { return has ? double(round_to(s.q_dtype, x * scale)) : double(x); };
  for (int64_t i = 0; i < p.num_seqs; ++i) {
    const int64_t q0 = p.cu_q_lens[size_t(i)], q_len = p.cu_q_lens[size_t(i + 1)] - q0, kv_len = p.kv_lens[size_t(i)];
    const int64_t pads = pad_slots_per_seq.empty() ? 0 : pad_slots_per_seq[size_t(i)];
    for (int64_t r = 0; r < q_len; ++r) {
      const int64_t q_span = kv_len - q_len + r;
      for (int64_t h = 0; h < s.num_q_heads; ++h) {
        const int64_t kvh = h / ratio;
        const float* q = p.q.data() + ((q0 + r) * s.num_q_heads + h) * d;
        std::vector<double> sc(size_t(kv_len + pads));
        std::vector<char> attended(size_t(kv_len), 0);
        for (int64_t j = 0; j < kv_len; ++j) {
          const int64_t page = p.page_indices[size_t(i * p.pages_per_seq + j / s.page_size)];
          double dot = 0;
          for (int64_t c = 0; c < d; ++c)
            dot += double(q[c]) * dequant(p.k_at(page, j % s.page_size, kvh, c), s.has_k_scale, s.k_scale);
          double x = dot * double(s.sm_scale);
          const bool masked = q_span < j || (s.has_sliding_window && q_span - s.sliding_window >= j);
          if (s.has_soft_cap) x = double(s.soft_cap) * std::tanh(x / double(s.soft_cap));
          if (masked) x += double(s.mask_value);
          attended[size_t(j)] = !masked;
          sc[size_t(j)] = x;
        }
        for (int64_t j = kv_len; j < kv_len + pads; ++j) sc[size_t(j)] = double(s.mask_value);
        const double mx = *std::max_element(sc.begin(), sc.end());
        double sum = 0;
        for (auto& x : sc) sum += (x = std::exp(x - mx));
        for (int64_t c = 0; c < d; ++c) {
          double acc = 0, mv = 0;
          for (int64_t j = 0; j < kv_len; ++j) {
            const int64_t page = p.page_indices[size_t(i * p.pages_per_seq + j / s.page_size)];
            const double v = dequant(p.v_at(page, j % s.page_size, kvh, c), s.has_v_scale, s.v_scale);
            acc += sc[size_t(j)] * v;
            if (attended[size_t(j)]) mv = std::max(mv, std::fabs(v));
          }
          const size_t o = size_t(((q0 + r) * s.num_q_heads + h) * d + c);
          t.out[o] = acc / sum;
          t.max_abs_v[o] = mv;
          t.max_abs_out = std::max(t.max_abs_out, std::fabs(t.out[o]));
        }
      }
    }
  }
  return t;
}

// The acceptance bound of issue 7: 2u (max|V| + |truth|) + 1e-5 (1 + max|truth|),
// u the largest unit roundoff on the pair's path (float32 arithmetic included).
inline double path_unit_roundoff(const Spec& s) {
  return std::max({unit_roundoff(s.q_dtype), unit_roundoff(s.kv_dtype), unit_roundoff(DType::kFloat32)});
}

struct RunOut {
  TiledResult result;
  std::vector<float> out;
  Diagnostics diags;
};

inline RunOut run(const Problem& p, int64_t q_heads_per_blk, int64_t combined_per_blk, bool compute = true) {
  RunOut r;
  TiledConfig cfg;
  cfg.num_q_heads_per_blk = q_heads_per_blk;
  cfg.num_combined_kv_heads_per_blk = combined_per_blk;
  cfg.compute = compute;
  r.out.assign(size_t(p.num_tokens * p.spec.num_q_heads * p.spec.head_dim), -12345.0f);
  const rpa_problem view = p.view();
  r.result = tiled_attention(view, cfg, r.out.data(), r.diags);
  return r;
}

}  // namespace rpa::tiled::testing
