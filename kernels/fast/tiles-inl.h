// The fast kernel's SIMD tiles (per Highway target): flash-style attention of a tile of rows over KV blocks.
// Included once per target by simd_attention.cc through foreach_target.h.
//
// A tile is rows [row0, row1) of one (sequence, KV head) group; row
// rho = token * group + head-in-group, so the GQA q heads of a KV head share
// every K/V block. Keys come in blocks of kBlockKeys, converted to float32
// once per block (or read in place for float32 KV). Scores, the online
// softmax (running max m, sum l, accumulator O) and p.v are float32; the
// probabilities stay float32 (the exact math), where the reference casts them
// to V's dtype first - a difference inside the tolerance bound.
//
// Two shapes:
//  * TileB (many rows): rows live in SIMD lanes. Q is transposed once per
//    tile, S^T[key][rows] accumulates broadcast K elements times Q^T vectors,
//    so the row-wise softmax is lane-wise and needs no horizontal operation.
//  * TileA (few rows, e.g. decode: the group's q heads of one token): dot
//    products along head_dim, 4 rows x (lanes / 4) keys per register block,
//    reduced into one vector of scores by a ConcatEven/ConcatOdd tree.
// Both end in PVRows: O[rows][head_dim] += p[key][row] * V[key][:].
#if defined(RPA_FAST_TILES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef RPA_FAST_TILES_INL_H_
#undef RPA_FAST_TILES_INL_H_
#else
#define RPA_FAST_TILES_INL_H_
#endif

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "hwy/highway.h"
#include "hwy/contrib/math/math-inl.h"
#if HWY_ARCH_X86
#include <immintrin.h>  // TransposeQ on AVX-512 and AVX2
#endif
#include "kernels/fast/convert-inl.h"
#include "kernels/fast/plan.h"
#include "kernels/fast/scratch.h"

HWY_BEFORE_NAMESPACE();
namespace rpa::fast::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DI = hn::RebindToSigned<DF>;
using ConvertFn = void (*)(const uint8_t*, int64_t, size_t, bool, float, DType, float*);

template <DType kKv>
void ConvertRowFn(const uint8_t* src, int64_t n, size_t n_padded, bool scaled, float scale, DType q, float* dst) {
  ConvertRow<kKv>(src, n, n_padded, scaled, scale, q, dst);
}

inline ConvertFn ConverterFor(DType kv) {
  switch (kv) {
    case DType::kFloat32: return &ConvertRowFn<DType::kFloat32>;
    case DType::kBFloat16: return &ConvertRowFn<DType::kBFloat16>;
    case DType::kFloat16: return &ConvertRowFn<DType::kFloat16>;
    case DType::kFloat8E4M3FN: return &ConvertRowFn<DType::kFloat8E4M3FN>;
    case DType::kFloat8E5M2: return &ConvertRowFn<DType::kFloat8E5M2>;
    default: return &ConvertRowFn<DType::kInt8>;  // int8 and int4 (a byte each)
  }
}

// K of head h0 of keys [k, k + n) of `s` (heads follow as K, V, K, V, ...,
// the token's row of every head contiguous in its page), walking the page
// table without a division per key.
inline void TokenRows(const KernelCtx& c, const SeqPlan& s, int64_t h0, int64_t k, int64_t n, const uint8_t** out) {
  const int64_t ps = c.page_size, row_bytes = c.head_dim * c.kv_elem_bytes;
  const int32_t* pages = c.pages + s.page_row * c.pages_per_seq;
  int64_t page = k / ps, off = k % ps;
  for (int64_t j = 0; j < n; ++j) {
    out[j] = c.kv + (int64_t(pages[page]) * ps + off) * c.kv_slot_bytes + 2 * h0 * row_bytes;
    if (++off == ps) off = 0, ++page;
  }
}

// Row pointers for keys [b0, b0 + nb) of one KV head. `native`: the rows
// where they lie in the cache, read (and dequantised) by the tiles' loads;
// otherwise converted to float32 rows in the scratch. K pointers past nb (up
// to a multiple of `pad`) point to a zero row (zero in every dtype).
inline void GatherBlock(const KernelCtx& c, const SeqPlan& s, int64_t g, int64_t b0, int64_t nb, size_t pad,
                        Scratch& sc, ConvertFn convert, bool native) {
  const int64_t D = c.head_dim;
  const int64_t row_bytes = D * c.kv_elem_bytes;
  TokenRows(c, s, g, b0, nb, sc.krow.data());
  for (int64_t j = 0; j < nb; ++j) {
    const uint8_t* k = sc.krow[j];
    const uint8_t* v = k + row_bytes;
    if (native) {
      sc.krow[j] = k;
      sc.vrow[j] = v;
    } else {
      float* kd = sc.kbuf.get() + j * sc.Dp;
      float* vd = sc.vbuf.get() + j * sc.Dp;
      convert(k, D, sc.Dp, c.has_k_scale, c.k_scale, c.q_dtype, kd);
      convert(v, D, sc.Dp, c.has_v_scale, c.v_scale, c.q_dtype, vd);
      sc.krow[j] = reinterpret_cast<const uint8_t*>(kd);
      sc.vrow[j] = reinterpret_cast<const uint8_t*>(vd);
    }
  }
  const size_t nbp = (size_t(nb) + pad - 1) / pad * pad;
  for (size_t j = size_t(nb); j < nbp; ++j) sc.krow[j] = reinterpret_cast<const uint8_t*>(sc.zero.get());
}

// float32 K and V without scales are read where they lie in the cache
// (head_dim a multiple of the lanes); every other KV block is converted to
// float32 rows first (GatherBlock).
inline bool KvReadInPlace(const KernelCtx& c) {
  return c.kv_dtype == DType::kFloat32 && !c.has_k_scale && !c.has_v_scale && c.head_dim > 0 &&
         size_t(c.head_dim) % hn::Lanes(DF()) == 0;
}

// How the tiles read a row: its dtype as stored (float32 once converted)
// and, for native rows, the dequantisation the reference applies.
struct RowRead {
  bool scaled = false;
  float scale = 1.0f;
  DType q = DType::kFloat32;
};

// kScaled is a template parameter so the hot loops carry no branch (a
// branch there keeps GCC from holding the accumulators in registers).
template <DType kRow, bool kScaled>
HWY_INLINE VF LoadRow(DF df, const uint8_t* HWY_RESTRICT row, size_t elem, const RowRead& rd) {
  constexpr size_t kBytes = kRow == DType::kFloat32 ? 4 : (kRow == DType::kBFloat16 || kRow == DType::kFloat16) ? 2 : 1;
  VF v = LoadKv<kRow>(df, row + elem * kBytes);
  if constexpr (kScaled) v = RoundToQ(df, rd.q, hn::Mul(v, hn::Set(df, rd.scale)));
  return v;
}

// Asks for the K and V rows of keys [b0, b0 + nb) ahead of their use: a
// head's rows sit one page-row (num_combined_kv_heads * head_dim elements,
// 4 KiB and more) apart, a stride the hardware prefetchers do not follow
// across pages. nb <= kBlockKeys.
inline void PrefetchBlock(const KernelCtx& c, const SeqPlan& s, int64_t g, int64_t b0, int64_t nb) {
  const int64_t row_bytes = c.head_dim * c.kv_elem_bytes;
  const uint8_t* rows[kBlockKeys];
  TokenRows(c, s, g, b0, nb, rows);
  for (int64_t j = 0; j < nb; ++j)
    for (int64_t off = 0; off < 2 * row_bytes; off += 64) __builtin_prefetch(rows[j] + off, 0, 3);
}

// The next block's lines, prefetched into L2 (prefetcht1) a few at a time
// between the arithmetic of the decode items (GroupBf16, GroupAvx2): the
// same lines issued in one burst per head step stalled the loads behind
// them until DRAM answered, and the cold decode took about its warm time
// plus the whole memory time (AVX-512 item). Rows [j, j_end),
// each `bytes` (a multiple of 64) from rows[j]. Next() is a prefetch, an
// add and a rarely taken branch; the cursor before it looked the row up and
// counted lines on every call, and the warm decode (fast_bench, medians of
// 6 interleaved runs) took 0.625 / 0.544 ms (q float32 / bfloat16) against
// 0.574 / 0.516 now; cold, no difference (0.655 / 0.622 vs 0.647 / 0.635).
struct L2LineStream {
  const uint8_t* const* rows = nullptr;
  int64_t j = 0, j_end = 0, bytes = 0;
  const uint8_t* p = nullptr;    // the next line
  const uint8_t* end = nullptr;  // the end of row j
  int64_t step = 0;              // 64, or 0 once every row is issued (p then stays on a line already asked for)

  HWY_INLINE void Start() {
    if (j < j_end) {
      p = rows[j], end = p + bytes, step = 64;
    } else {
      static const uint8_t idle[64] = {};
      p = idle, end = nullptr, step = 0;
    }
  }
  HWY_INLINE void Next() {
    __builtin_prefetch(p, 0, 2);
    p += step;
    if (HWY_UNLIKELY(p == end)) ++j, Start();
  }
  HWY_INLINE void Rest() {
    while (step != 0) Next();
  }
};

// Targets of 8 lanes or fewer: AVX2 and below, whose 16 vector registers
// (AVX2) the register blocks and p.v order below were shaped and measured
// for; wider targets keep the AVX-512 choices.
inline constexpr bool kNarrowSimd = hn::MaxLanes(DF()) <= 8;

// e^x for the softmax weights of a block (tiles and group items), on every
// target. Half hn::Exp's operations count where the vector unit is short of
// ports: on the Intel Xeon with AMX (2 vCPUs; 512-bit operations issue on
// the two FMA ports only) the bench's prefill float32, 2 threads, cold, six
// alternated rounds: 23.7-25.6 ms against 24.0-26.5 with ExpKeepNaN. AVX2
// measured faster too (convert-inl.h); on the model-207 Xeon and Zen 5 a
// similar exponential measured within the noise (docs/fast_kernel.md).
HWY_INLINE VF WeightExp(DF df, VF x) { return ExpFast(df, x); }

// e^(s - m - shift) (SeqPlan::p_shift) as (s - m) - shift: m + shift
// first loses the shift where |m| is large - a positive mask_value of 3e38
// puts a row's running max there - and O = sum p V then overflows to Inf
// where V is near float32's largest (conform: mask_value 3e38 with v_scale
// 1e38, gen-501476 of seed 500000).
HWY_INLINE VF ShiftedWeight(DF df, VF s, VF m_use, VF shift) {
  return WeightExp(df, hn::Sub(hn::Sub(s, m_use), shift));
}

// o[r][:] = o[r][:] * alpha[r] + sum_j p[j * pstride + r] * vrow[j][:] for
// r < kRows, over head-dim vectors [v0, v0 + kDV).
template <int kRows, DType kRow, bool kScaled, int kDV>
HWY_INLINE void PVChunk(float* HWY_RESTRICT o, size_t Dp, const float* alpha, const float* HWY_RESTRICT p,
                        size_t pstride, int64_t nb, const uint8_t* const* vrow, const RowRead& rd, size_t v0) {
  const DF df;
  const size_t N = hn::Lanes(df);
  VF acc[kRows][kDV];
  for (int r = 0; r < kRows; ++r) {
    const VF a = hn::Set(df, alpha[r]);
    for (int v = 0; v < kDV; ++v) acc[r][v] = hn::Mul(hn::Load(df, o + r * Dp + (v0 + v) * N), a);
  }
  for (int64_t j = 0; j < nb; ++j) {
    VF vv[kDV];
    for (int v = 0; v < kDV; ++v) vv[v] = LoadRow<kRow, kScaled>(df, vrow[j], (v0 + v) * N, rd);
    const float* pj = p + j * pstride;
    for (int r = 0; r < kRows; ++r) {
      const VF pr = hn::Set(df, pj[r]);
      for (int v = 0; v < kDV; ++v) acc[r][v] = hn::MulAdd(pr, vv[v], acc[r][v]);
    }
  }
  for (int r = 0; r < kRows; ++r)
    for (int v = 0; v < kDV; ++v) hn::Store(acc[r][v], df, o + r * Dp + (v0 + v) * N);
}

// PVChunk over every head-dim vector, for `rows` rows (a multiple of kRows,
// kRows by default) chunk by chunk: each chunk for every group of kRows
// rows, so a chunk of the block's V rows (nb x kDV vectors) stays in L1
// across the groups. Sixteen accumulators: 4 rows x 4 vectors for the
// few-row tiles, 8 rows x 2 vectors where there are rows to spare (fewer
// vector loads of V per FMA: measured 20-30% faster on AVX-512).
// kDVWide: head-dim vectors per chunk where not the default (16 / kRows
// accumulators, 8 / kRows on AVX2).
template <int kRows, DType kRow, bool kScaled, int kDVWide = 0>
HWY_INLINE void PVRowsScaled(float* HWY_RESTRICT o, size_t Dp, const float* alpha, const float* HWY_RESTRICT p,
                             size_t pstride, int64_t nb, const uint8_t* const* vrow, const RowRead& rd,
                             size_t rows = kRows) {
  // 16 accumulators leave no register for V on AVX2 (16 registers): they
  // spilled, and a 1-thread warm decode took 4.14 ms against 3.16 with 8.
  constexpr int kDV = kDVWide > 0 ? kDVWide : (kNarrowSimd ? 8 : 16) / kRows;
  const size_t nv = Dp / hn::Lanes(DF());
  size_t v0 = 0;
  for (; v0 + kDV <= nv && !(kDV == 3 && nv - v0 == 4); v0 += kDV)
    for (size_t r0 = 0; r0 < rows; r0 += kRows)
      PVChunk<kRows, kRow, kScaled, kDV>(o + r0 * Dp, Dp, alpha + r0, p + r0, pstride, nb, vrow, rd, v0);
  if constexpr (kDV == 3)  // 3 + ... + 3 + 2 + 2 where nv = 1 mod 3: no 4 x 1 chunk, whose 4 FMA chains wait on latency
    for (; v0 + 2 <= nv; v0 += 2)
      for (size_t r0 = 0; r0 < rows; r0 += kRows)
        PVChunk<kRows, kRow, kScaled, 2>(o + r0 * Dp, Dp, alpha + r0, p + r0, pstride, nb, vrow, rd, v0);
  for (; v0 < nv; ++v0)
    for (size_t r0 = 0; r0 < rows; r0 += kRows)
      PVChunk<kRows, kRow, kScaled, 1>(o + r0 * Dp, Dp, alpha + r0, p + r0, pstride, nb, vrow, rd, v0);
}

template <int kRows, DType kRow>
HWY_INLINE void PVRows(float* HWY_RESTRICT o, size_t Dp, const float* alpha, const float* HWY_RESTRICT p,
                       size_t pstride, int64_t nb, const uint8_t* const* vrow, const RowRead& rd) {
  if (rd.scaled) return PVRowsScaled<kRows, kRow, true>(o, Dp, alpha, p, pstride, nb, vrow, rd);
  PVRowsScaled<kRows, kRow, false>(o, Dp, alpha, p, pstride, nb, vrow, rd);
}

// PVRows of `rows` rows (a multiple of kRows) of float32 V. kChunkOuter:
// PVRowsScaled's chunk-by-chunk order over all the rows; otherwise row
// group by row group, each sweeping the whole block again (32 KiB of
// float32 V at head_dim 128, Zen 3's whole L1). The same sums in the same
// order per element either way.
//
// On AVX2 4 rows x 3 vectors (twelve FMA chains, as q.k's 3 x 4; 3 V loads
// and 4 broadcasts per 12 FMAs) where 4 x 2 left the two FMA pipes no
// slack over their 4-cycle latency (8 chains; 6 loads per 8 FMAs). Zen 3
// guest, prefill float32, one thread, warm (fast_bench, minimum of 3 calls
// per round, 10-12 alternated rounds on a busy host): minimum 77-82
// against 79-102 ms, median 86-100 against 101-118 ms; mixed float32 55.3 /
// 59.5 against 54.9 / 65.7 ms (minimum / median).
template <int kRows>
inline constexpr int kTilePVVectors = kNarrowSimd && kRows == 4 ? 3 : 0;
template <int kRows, bool kChunkOuter>
HWY_INLINE void PVTileRows(float* HWY_RESTRICT o, size_t Dp, const float* alpha, const float* HWY_RESTRICT p,
                           size_t pstride, int64_t nb, const uint8_t* const* vrow, size_t rows) {
  const RowRead rd{};
  if constexpr (kChunkOuter) {
    PVRowsScaled<kRows, DType::kFloat32, false, kTilePVVectors<kRows>>(o, Dp, alpha, p, pstride, nb, vrow, rd, rows);
  } else {
    for (size_t r0 = 0; r0 < rows; r0 += kRows)
      PVRowsScaled<kRows, DType::kFloat32, false>(o + r0 * Dp, Dp, alpha + r0, p + r0, pstride, nb, vrow, rd);
  }
}

// soft_cap * tanh(x / soft_cap) (kernel.py:139-140), NaN kept.
HWY_INLINE VF SoftCap(DF df, VF x, VF cap) {
  const VF t = hn::Mul(cap, hn::Tanh(df, hn::Div(x, cap)));
  return hn::IfThenElse(hn::IsNaN(x), x, t);
}

// Token t's output rows of KV head g's q heads: `group` rows of head_dim
// floats, one after another.
inline float* OutRows(const KernelCtx& c, const SeqPlan& s, int64_t g, int64_t t) {
  return OutHeadRow(c, s, t, g * c.group);
}

// Writes row `rho` of a tile: O / l cast to q's dtype, or zeros for a
// sequence without keys (the reference's einsum over zero keys).
inline void WriteRow(const KernelCtx& c, const SeqPlan& s, int64_t g, int64_t rho_global, const float* o, float l) {
  const DF df;
  const size_t N = hn::Lanes(df);
  const int64_t G = c.group, D = c.head_dim;
  float* dst = OutRows(c, s, g, rho_global / G) + rho_global % G * D;
  if (s.num_keys == 0) {
    std::fill(dst, dst + D, 0.0f);
    return;
  }
  // O times 1 / l: one division a row instead of one a vector (VDIVPS
  // issues every 16 cycles or so on AVX-512), one more float32 rounding,
  // far inside the tolerance; l lies in [e^-p_shift, number of keys], so
  // 1 / l neither overflows nor loses precision to a subnormal.
  const VF lv = hn::Set(df, 1.0f / l);
  size_t d = 0;
  for (; d + N <= size_t(D); d += N) hn::StoreU(RoundToQ(df, c.q_dtype, hn::Mul(hn::Load(df, o + d), lv)), df, dst + d);
  if (d < size_t(D)) {
    HWY_ALIGN float tmp[hn::MaxLanes(df)];
    hn::Store(RoundToQ(df, c.q_dtype, hn::Mul(hn::Load(df, o + d), lv)), df, tmp);
    std::memcpy(dst + d, tmp, (size_t(D) - d) * sizeof(float));
  }
}

inline const float* QRow(const KernelCtx& c, const SeqPlan& s, int64_t g, int64_t rho_global) {
  const int64_t G = c.group;
  return QHeadRow(c, s, rho_global / G, g * G + rho_global % G);
}

struct TileKeys {
  RowRange range;     // keys the tile visits
  int64_t lo_max;     // a block inside [lo_max, hi_min] needs no mask
  int64_t hi_min;
};

// The keys rows [row0, row1) visit: those some row attends where masked
// blocks may be skipped (`skip`), else every key of the sequence.
inline RowRange VisitedKeys(const KernelCtx& c, const SeqPlan& s, int64_t row0, int64_t row1, bool skip) {
  if (skip) return tile_key_range(c, s, row0 / c.group, (row1 - 1) / c.group);
  return {0, s.num_keys - 1};
}

inline TileKeys KeysOfTile(const KernelCtx& c, const SeqPlan& s, int64_t row0, int64_t row1, const int32_t* lo,
                           const int32_t* hi, bool skip) {
  TileKeys k;
  k.lo_max = 0;
  k.hi_min = s.num_keys - 1;
  for (int64_t r = 0; r < row1 - row0; ++r) k.lo_max = std::max<int64_t>(k.lo_max, lo[r]), k.hi_min = std::min<int64_t>(k.hi_min, hi[r]);
  k.range = VisitedKeys(c, s, row0, row1, skip);
  return k;
}

// ---------------------------------------------------------- exact scores
// Scores are float32 FMA chains, a few float32 ulps from the exactly rounded
// dot product the reference computes (its einsum, kernel.py:131, rounded
// once). Where scores are large - hundreds, as with int8 keys and no
// sm_scale - a few ulps of them is a relative error of 1e-5 in the
// probabilities of near-tied keys, more than the tolerance's float32
// floor. A block whose scores (after sm_scale) reach this magnitude is
// recomputed with every product exact in double and one rounding to
// float32; attention scores of real models stay well below it.
inline constexpr float kExactScoresAbove = 128.0f;

// Whether some |p[i]| * scale (n floats, a multiple of the lanes) reaches
// kExactScoresAbove, or some p[i] is NaN: float32 FMA chains over K
// elements near float32's largest values can pass Inf in one lane and -Inf
// in another where the exact dot product is finite (k_scale near 1e38), so
// a NaN score is recomputed too (it stays NaN where K or q holds a NaN).
// An Inf score under sm_scale 0 (Inf x 0: NaN, not >= the threshold) is
// recomputed as well: one lane's partial sum can overflow where the exact
// product is finite, which sm_scale 0 turns into 0 in the reference.
HWY_INLINE bool NeedsExactScores(const float* HWY_RESTRICT p, size_t n, float scale) {
  const DF df;
  VF m = hn::Zero(df);
  auto nan = hn::FirstN(df, 0);
  for (size_t i = 0; i < n; i += hn::Lanes(df)) {
    const VF x = hn::Load(df, p + i);
    m = hn::Max(m, hn::Abs(x));
    nan = hn::Or(nan, hn::IsNaN(x));
  }
  return !hn::AllFalse(df, nan) || !(hn::GetLane(hn::MaxOfLanes(df, m)) * scale < kExactScoresAbove);
}

// q.k rounded once to float32, the products exact in double (24-bit
// significands: 48-bit products), summed in double vectors: the sum's own
// error, head_dim x 2^-53 of sum |q_d k_d|, is far below a float32 ulp of
// it. Vectors rather than one scalar chain: the decode items take every
// score this way where their scores are ill-conditioned, and one scalar
// chain a score made the bench's decode 6-22x slower when forced on.
inline float ExactDot(const float* q, const float* k, int64_t D) {
#if HWY_HAVE_FLOAT64 && HWY_TARGET != HWY_SCALAR
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> dh;
  const int64_t N = int64_t(hn::Lanes(dd));
  auto a0 = hn::Zero(dd), a1 = hn::Zero(dd);
  int64_t d = 0;
  for (; d + 2 * N <= D; d += 2 * N) {
    a0 = hn::MulAdd(hn::PromoteTo(dd, hn::LoadU(dh, q + d)), hn::PromoteTo(dd, hn::LoadU(dh, k + d)), a0);
    a1 = hn::MulAdd(hn::PromoteTo(dd, hn::LoadU(dh, q + d + N)), hn::PromoteTo(dd, hn::LoadU(dh, k + d + N)), a1);
  }
  double s = hn::GetLane(hn::SumOfLanes(dd, hn::Add(a0, a1)));
#else
  double s = 0.0;
  int64_t d = 0;
#endif
  for (; d < D; ++d) s += double(q[d]) * double(k[d]);
  return static_cast<float>(s);
}

// A K row as float32 values for ExactDot: as it lies, or (native: in the
// KV dtype) converted into the scratch.
inline const float* ExactKRow(const KernelCtx& c, const uint8_t* krow, bool native, Scratch& sc) {
  if (!native) return reinterpret_cast<const float*>(krow);
  ConverterFor(c.kv_dtype)(krow, c.head_dim, sc.Dp, c.has_k_scale, c.k_scale, c.q_dtype, sc.exact_k.get());
  return sc.exact_k.get();
}

// Notes a recomputed score (sm_scale applied) that float32 cannot hold:
// past 3.4e38 the exact math is still finite, the float32 softmax not.
inline void NoteExactScore(const KernelCtx& c, float score) {
  if (!std::isfinite(score) && c.nonfinite_exact_scores)
    c.nonfinite_exact_scores->store(true, std::memory_order_relaxed);
}

// A group item's raw scores sa[key][4] of group gi (rows gi * 4 ..) of KV
// head g, keys 0 .. nb of the block, recomputed exactly when large, or
// always where `ill_conditioned` (GroupScoresIllConditioned). krow: the
// keys' K rows, float32 or (native) in the KV dtype.
inline void ExactGroupScoresIfLarge(const KernelCtx& c, const SeqPlan& s, int64_t g, int64_t gi, int64_t R, int64_t nb,
                                    int64_t npad, const uint8_t* const* krow, bool native, float* HWY_RESTRICT sa,
                                    Scratch& sc, bool ill_conditioned) {
  if (!ill_conditioned && !NeedsExactScores(sa, size_t(npad) * 4, std::fabs(c.sm_scale))) return;
  for (int64_t j = 0; j < nb; ++j) {
    const float* k = ExactKRow(c, krow[j], native, sc);
    for (int64_t r = gi * 4; r < std::min<int64_t>(R, gi * 4 + 4); ++r) {
      sa[j * 4 + r % 4] = ExactDot(QRow(c, s, g, r), k, c.head_dim);
      NoteExactScore(c, sa[j * 4 + r % 4] * c.sm_scale);
    }
  }
}

// max over rows [row0, row0 + R) of KV head g of ||q_row||_1, summed in
// float32 (raw_score_bound's padding covers that rounding); +inf if some
// element is NaN or infinite.
inline double TileQ1Max(const KernelCtx& c, const SeqPlan& s, int64_t g, int64_t row0, int64_t R) {
  const DF df;
  const int64_t N = int64_t(hn::Lanes(df)), D = c.head_dim;
  double best = 0.0;
  for (int64_t r = 0; r < R; ++r) {
    const float* q = QRow(c, s, g, row0 + r);
    VF acc = hn::Zero(df);
    int64_t d = 0;
    for (; d + N <= D; d += N) acc = hn::Add(acc, hn::Abs(hn::LoadU(df, q + d)));
    float sum = hn::GetLane(hn::SumOfLanes(df, acc));
    for (; d < D; ++d) sum += std::fabs(q[d]);
    if (!(sum <= std::numeric_limits<float>::max())) return std::numeric_limits<double>::infinity();
    best = std::max(best, double(sum));
  }
  return best;
}

// Whether scores of rows with ||q||_1 <= q1 against `s`'s keys are
// ill-conditioned (tiles: ExactTileScoresIfLarge; group items:
// GroupScoresIllConditioned, over every row of the item's heads): their
// products' magnitudes (Hoelder: max ||q_row||_1 over the item's rows x max |K| x
// |sm_scale|, raw_score_bound) reach kExactScoresAbove, whatever the scores
// themselves. A score of 60 summed from products of 350 in magnitude (int8
// K over its range, sm_scale 0.1, head_dim 96) carries float32 rounding of
// the 350s; with near-tied keys and V spread over 380 that put decode rows
// at 16-22x the reference's error, which rounds the einsum once (`rpa
// --simd avx2 conform --shapes large`, gen-large-201184 and 201248). Such
// an item's or tile's blocks take the exact recomputation; the rows of a
// decode item are few, so it costs a pass over them per item. With the bench's
// contents (q and K within [-1, 1], sm_scale 1, head_dim 128) the bound is
// about 80: never.
// (A scalar pass over the rows cost the bench's warm decode 8-10%;
// TileQ1Max's vectors nothing measurable.) Non-finite q or K: left to
// NeedsExactScores, as before.
inline bool ScoresIllConditioned(const KernelCtx& c, const SeqPlan& s, double q1) {
  return s.k_finite && std::isfinite(q1) && !(raw_score_bound(c, q1, s.kmax) < kExactScoresAbove);
}
inline bool GroupScoresIllConditioned(const KernelCtx& c, const SeqPlan& s, int64_t h0, int64_t nh, int64_t R) {
  if (!s.k_finite) return false;
  double q1 = 0.0;
  for (int64_t h = 0; h < nh; ++h) q1 = std::max(q1, TileQ1Max(c, s, h0 + h, 0, R));
  return ScoresIllConditioned(c, s, q1);
}

// A tile's scores st[key][RP] (sm_scale applied) of rows row0 .. row0 + R of
// KV head g, keys 0 .. nb of the block (nbp padded), recomputed exactly
// when large, or always where `ill_conditioned` (ScoresIllConditioned of
// the tile's rows: scores under kExactScoresAbove summed from products far
// above it - int8 K without k_scale, sm_scale 0.125, head_dim 64 put a
// prefill row at 29x the reference's error, half the kernel bound: `rpa
// conform --shapes large --cases 1000 --seed 900000`, gen-large-900128).
// krow as for ExactGroupScoresIfLarge.
inline void ExactTileScoresIfLarge(const KernelCtx& c, const SeqPlan& s, int64_t g, int64_t row0, int64_t R,
                                   int64_t nb, int64_t nbp, size_t RP, const uint8_t* const* krow, bool native,
                                   float* HWY_RESTRICT st, Scratch& sc, bool ill_conditioned) {
  if (!ill_conditioned && !NeedsExactScores(st, size_t(nbp) * RP, 1.0f)) return;
  for (int64_t j = 0; j < nb; ++j) {
    const float* k = ExactKRow(c, krow[j], native, sc);
    for (int64_t r = 0; r < R; ++r) {
      st[j * RP + r] = ExactDot(QRow(c, s, g, row0 + r), k, c.head_dim) * c.sm_scale;
      NoteExactScore(c, st[j * RP + r]);
    }
  }
}

// ---------------------------------------------------------------- TileB
// Scores st[key][rows] of a block -> probabilities, and the online softmax
// state: soft cap and mask (kernel.py:139-141), keys past the block -inf;
// m_new = max(m, block max), p = e^(s - m_new - p_shift), l = l * e^(m -
// m_new) + sum p, alpha = e^(m - m_new) per row for rescaling O. A running
// max of -inf uses 0 instead, so rows whose scores so far are all -inf do
// not turn NaN. p_shift: SeqPlan::p_shift.
template <int kRV>
HWY_INLINE void BlockSoftmaxB(const KernelCtx& c, float* HWY_RESTRICT st, size_t RP, int64_t b0, int64_t nb,
                              int64_t nbp, bool need_mask, const hn::Vec<DI>* lo_i, const hn::Vec<DI>* hi_i, VF* m,
                              VF* l, float* alpha, float p_shift) {
  const DF df;
  const DI di;
  const size_t N = hn::Lanes(df);
  const VF neg_inf = hn::Set(df, -std::numeric_limits<float>::infinity());
  const VF mask_v = hn::Set(df, c.mask_value);
  const VF cap_v = hn::Set(df, c.soft_cap);
  VF mb[kRV];
  for (int rv = 0; rv < kRV; ++rv) mb[rv] = neg_inf;
  for (int64_t j = 0; j < nbp; ++j) {
    const auto key = hn::Set(di, int32_t(b0 + j));
    for (int rv = 0; rv < kRV; ++rv) {
      float* sp = st + j * RP + rv * N;
      VF v = hn::Load(df, sp);
      if (c.has_soft_cap) v = SoftCap(df, v, cap_v);
      if (need_mask) {
        const auto masked = hn::Or(hn::Lt(key, lo_i[rv]), hn::Gt(key, hi_i[rv]));
        v = hn::IfThenElse(hn::RebindMask(df, masked), hn::Add(v, mask_v), v);
      }
      if (j >= nb) v = neg_inf;
      hn::Store(v, df, sp);
      mb[rv] = hn::Max(mb[rv], v);
    }
  }
  for (int rv = 0; rv < kRV; ++rv) {
    const VF m_new = hn::Max(m[rv], mb[rv]);
    const VF m_use = hn::IfThenZeroElse(hn::Eq(m_new, neg_inf), m_new);
    const VF a = ExpKeepNaN(df, hn::Sub(m[rv], m_use));
    hn::Store(a, df, alpha + rv * N);
    const VF shift = hn::Set(df, p_shift);
    VF ls = hn::Zero(df);
    for (int64_t j = 0; j < nbp; ++j) {
      float* sp = st + j * RP + rv * N;
      const VF p = ShiftedWeight(df, hn::Load(df, sp), m_use, shift);
      hn::Store(p, df, sp);
      ls = hn::Add(ls, p);
    }
    l[rv] = hn::MulAdd(l[rv], a, ls);
    m[rv] = m_new;
  }
}

// Head_dim steps per FMA chain of the tiles' q.k. Each score is one
// chain per lane (K broadcast), so one chain over all of head_dim rounds a
// partial sum D times: with head_dim 256, int4 K and sm_scale 1 (scores
// of tens, probabilities near one-hot) the prefill rows came out 1.8x the
// kernel bound from the exact truth, 16x the reference's error, whose
// einsum rounds once (`rpa conform --shapes large`, gen-large-1235 without
// its soft cap). Chains of 32 steps whose sums are added in st round
// about sqrt(32 x 256) + 8 x sqrt(32) times instead (docs/fast_kernel.md,
// "Long head_dim").
inline constexpr int64_t kQKChunk = 32;

// S^T[kKC keys][kRB vectors of rows] += K[key][d] (broadcast) * Q^T[d][rows],
// then times sm_scale. kKC x kRB = 16 accumulators; 8 keys x 2 vectors
// loads fewer Q^T vectors per FMA than 4 x 4 (measured 25% faster on
// AVX-512: broadcasts of K are cheap, vector loads are not). head_dim in
// chunks of kQKChunk steps, each chunk's sums added to st.
template <int kKC, int kRB>
HWY_INLINE void QKRegBlock(const float* HWY_RESTRICT qt, size_t RP, const uint8_t* const* krow, int64_t D, float sm,
                           float* HWY_RESTRICT st, L2LineStream& pf, int64_t pf_mask) {
  const DF df;
  const size_t N = hn::Lanes(df);
  const float* kr[kKC];
  for (int jj = 0; jj < kKC; ++jj) kr[jj] = reinterpret_cast<const float*>(krow[jj]);
  const VF vs = hn::Set(df, sm);  // attn *= sm_scale (kernel.py:132)
  for (int64_t d0 = 0; d0 < D; d0 += kQKChunk) {
    const int64_t d1 = std::min<int64_t>(D, d0 + kQKChunk);
    VF acc[kKC][kRB];
    for (int jj = 0; jj < kKC; ++jj)
      for (int rv = 0; rv < kRB; ++rv) acc[jj][rv] = hn::Zero(df);
    for (int64_t d = d0; d < d1; ++d) {
      if ((d & pf_mask) == 0) pf.Next();
      VF q[kRB];
      for (int rv = 0; rv < kRB; ++rv) q[rv] = hn::Load(df, qt + d * RP + rv * N);
      for (int jj = 0; jj < kKC; ++jj) {
        const VF k = hn::Set(df, kr[jj][d]);
        for (int rv = 0; rv < kRB; ++rv) acc[jj][rv] = hn::MulAdd(k, q[rv], acc[jj][rv]);
      }
    }
    const bool first = d0 == 0, last = d1 == D;
    for (int jj = 0; jj < kKC; ++jj)
      for (int rv = 0; rv < kRB; ++rv) {
        float* dst = st + jj * RP + rv * N;
        const VF x = first ? acc[jj][rv] : hn::Add(hn::Load(df, dst), acc[jj][rv]);
        hn::Store(last ? hn::Mul(x, vs) : x, df, dst);
      }
  }
}

// Row vectors per QK register block of a kRV-vector tile, and keys per
// block. With 16 vector registers (AVX2) 16 accumulators left no room for
// the Q^T vectors and the broadcast K: three accumulators went to the stack
// each step, a store-to-load chain through every FMA of theirs. 4 keys x 2
// vectors (8 keys x 1) keep everything in registers: a float32 prefill on
// one thread, warm, took 75-82 ms against 91 ms (fast_bench, minimum of
// 25 calls, three interleaved rounds on an AMD Zen 3 guest; 6 keys x 2
// vectors the same as 4 x 2). A 32-row tile (kRV 4) on AVX2 takes 3 keys x
// all 4 vectors: twelve chains instead of eight, one broadcast of K per
// four FMAs, Q^T's fourth vector a memory operand. The loop alone, on L1
// data on the Zen 3 guest, read 82-99 GFLOP/s a core against 53-72 for
// 4 x 2; in the kernel, one thread, warm (minimum of 15 calls, four to six
// interleaved rounds): mixed float32 50.6 against 51.5 ms and 51.4 against
// 55.2 ms, prefill float32 69.9 against 70.8 ms. Taller tiles (converted
// KV, kRV 8) keep 4 x 2: 3 x 4 there reads Q^T a third more often.
template <int kRV>
inline constexpr bool kQK3x4 = kNarrowSimd && kRV == 4;
template <int kRV>
inline constexpr int kQKRows = kQK3x4<kRV> ? 4 : kRV >= 2 ? 2 : 1;
// Accumulators per register block (16 on AVX-512, 8 or 12 on AVX2) over its rows.
template <int kRV>
inline constexpr int kQKKeys = (kNarrowSimd ? (kQK3x4<kRV> ? 12 : 8) : 16) / kQKRows<kRV>;

// S^T[kQKKeys keys][kRV vectors of rows] for keys krow[0 .. kQKKeys), with
// one line of `pf` every pf_mask + 1 steps of head_dim.
template <int kRV>
HWY_INLINE void QKBlockB(const float* HWY_RESTRICT qt, size_t RP, const uint8_t* const* krow, int64_t D, float sm,
                         float* HWY_RESTRICT st, L2LineStream& pf, int64_t pf_mask) {
  const size_t N = hn::Lanes(DF());
  constexpr int kRB = kQKRows<kRV>;
  for (int rv0 = 0; rv0 < kRV; rv0 += kRB)
    QKRegBlock<kQKKeys<kRV>, kRB>(qt + size_t(rv0) * N, RP, krow, D, sm, st + size_t(rv0) * N, pf, pf_mask);
}

// The largest of 7, 3, 1 such that a line every mask + 1 head_dim steps of
// a block's q.k (`steps`: its register blocks times head_dim) issues all
// `lines` lines; else 0 (a line every step), and L2LineStream::Rest issues
// what the steps did not.
inline int64_t StreamMask(int64_t steps, int64_t lines) {
  int64_t mask = 7;
  while (mask > 0 && steps / (mask + 1) < lines) mask /= 2;
  return mask;
}

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
// v[i] (row i of a 16 x 16 block) becomes column i: unpack pairs of rows,
// then pairs of pairs, then gather the 128-bit blocks of four row groups.
HWY_INLINE void Transpose16x16(__m512* v) {
  __m512 t[16], u[16];
  for (int i = 0; i < 8; ++i)
    t[2 * i] = _mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]), t[2 * i + 1] = _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]);
  for (int gq = 0; gq < 4; ++gq) {  // rows 4gq .. 4gq + 3: u[4gq + j], block k = their column 4k + j
    const __m512d a = _mm512_castps_pd(t[4 * gq]), b = _mm512_castps_pd(t[4 * gq + 1]);
    const __m512d c2 = _mm512_castps_pd(t[4 * gq + 2]), d = _mm512_castps_pd(t[4 * gq + 3]);
    u[4 * gq + 0] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c2));
    u[4 * gq + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c2));
    u[4 * gq + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
    u[4 * gq + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
  }
  for (int j = 0; j < 4; ++j) {
    const __m512 lo01 = _mm512_shuffle_f32x4(u[j], u[4 + j], 0x44), hi01 = _mm512_shuffle_f32x4(u[j], u[4 + j], 0xEE);
    const __m512 lo23 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0x44);
    const __m512 hi23 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0xEE);
    v[j] = _mm512_shuffle_f32x4(lo01, lo23, 0x88);
    v[4 + j] = _mm512_shuffle_f32x4(lo01, lo23, 0xDD);
    v[8 + j] = _mm512_shuffle_f32x4(hi01, hi23, 0x88);
    v[12 + j] = _mm512_shuffle_f32x4(hi01, hi23, 0xDD);
  }
}
#endif

#if HWY_TARGET == HWY_AVX2
// v[i] (row i of an 8 x 8 block) becomes column i, as Transpose16x16 does
// with 16 lanes.
HWY_INLINE void Transpose8x8(__m256* v) {
  __m256 t[8], u[8];
  for (int i = 0; i < 4; ++i)
    t[2 * i] = _mm256_unpacklo_ps(v[2 * i], v[2 * i + 1]), t[2 * i + 1] = _mm256_unpackhi_ps(v[2 * i], v[2 * i + 1]);
  for (int h = 0; h < 2; ++h) {  // rows 4h .. 4h + 3: u[4h + j] holds their columns j and j + 4
    u[4 * h + 0] = _mm256_shuffle_ps(t[4 * h], t[4 * h + 2], 0x44);
    u[4 * h + 1] = _mm256_shuffle_ps(t[4 * h], t[4 * h + 2], 0xEE);
    u[4 * h + 2] = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], 0x44);
    u[4 * h + 3] = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], 0xEE);
  }
  for (int j = 0; j < 4; ++j) {
    v[j] = _mm256_permute2f128_ps(u[j], u[4 + j], 0x20);
    v[4 + j] = _mm256_permute2f128_ps(u[j], u[4 + j], 0x31);
  }
}
#endif

// Rows [0, returned) of TransposeQ in kW x kW blocks of Vec registers
// (load, transpose in place, store); 0 where head_dim is not a multiple of kW.
template <int kW, class Vec, class LoadFn, class TransposeFn, class StoreFn>
HWY_INLINE int64_t TransposeQBlocks(const KernelCtx& c, const SeqPlan& s, int64_t g, int64_t row0, int64_t R,
                                    size_t RP, float* HWY_RESTRICT qt, LoadFn load, TransposeFn transpose,
                                    StoreFn store) {
  const int64_t D = c.head_dim;
  if (D % kW != 0) return 0;
  int64_t r0 = 0;
  for (; r0 + kW <= R; r0 += kW) {
    const float* rows[kW];
    for (int i = 0; i < kW; ++i) rows[i] = QRow(c, s, g, row0 + r0 + i);
    for (int64_t d0 = 0; d0 < D; d0 += kW) {
      Vec v[kW];
      for (int i = 0; i < kW; ++i) v[i] = load(rows[i] + d0);
      transpose(v);
      for (int i = 0; i < kW; ++i) store(qt + size_t(d0 + i) * RP + size_t(r0), v[i]);
    }
  }
  return r0;
}

// qt[d * RP + r] = q[d] of the tile's row r < R; the caller zeroed qt (the
// padding lanes). 16 x 16 blocks (8 x 8 on AVX2) transposed in registers
// where they fit (element by element this was 5-7% of a float32 prefill
// call on AVX-512, and 4-5% of the AVX2 tile's time on mixed).
inline void TransposeQ(const KernelCtx& c, const SeqPlan& s, int64_t g, int64_t row0, int64_t R, size_t RP,
                       float* HWY_RESTRICT qt) {
  const int64_t D = c.head_dim;
  int64_t r0 = 0;
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  r0 = TransposeQBlocks<16, __m512>(
      c, s, g, row0, R, RP, qt, [](const float* p) { return _mm512_loadu_ps(p); }, Transpose16x16,
      [](float* p, __m512 v) { _mm512_storeu_ps(p, v); });
#elif HWY_TARGET == HWY_AVX2
  r0 = TransposeQBlocks<8, __m256>(
      c, s, g, row0, R, RP, qt, [](const float* p) { return _mm256_loadu_ps(p); }, Transpose8x8,
      [](float* p, __m256 v) { _mm256_storeu_ps(p, v); });
#endif
  for (int64_t r = r0; r < R; ++r) {
    const float* q = QRow(c, s, g, row0 + r);
    for (int64_t d = 0; d < D; ++d) qt[size_t(d) * RP + size_t(r)] = q[d];
  }
}

// The output rows of tile rows [row0, row1) as an L2LineStream over its
// tokens (a token's rows of the group's heads lie together), streamed during
// the tile's last block: the lines are then in L2 when WriteRow stores to
// them. Without it the stores waited on memory (perf: the hottest
// instruction of a q.k-only float32 tile was the one after WriteRow's store;
// leaving the output unwritten took 2.2 of 22 ms, one thread, warm).
inline L2LineStream OutputStream(const KernelCtx& c, const SeqPlan& s, int64_t g, int64_t row0, int64_t row1,
                                 const uint8_t** rows) {
  const int64_t G = c.group, t0 = row0 / G, t1 = (row1 - 1) / G;
  for (int64_t t = t0; t <= t1; ++t)
    rows[t - t0] = reinterpret_cast<const uint8_t*>(OutRows(c, s, g, t));
  // Whole lines from the first row's start, plus one for a start inside a line.
  const int64_t bytes = (G * c.head_dim * int64_t(sizeof(float)) + 63) / 64 * 64 + 64;
  return L2LineStream{.rows = rows, .j = 0, .j_end = t1 - t0 + 1, .bytes = bytes};
}

template <int kRV>
void TileB(const KernelCtx& c, const SeqPlan& s, int64_t g, int64_t row0, int64_t row1, Scratch& sc) {
  const DF df;
  const DI di;
  const size_t N = hn::Lanes(df);
  const size_t RP = kRV * N;
  constexpr int kKC = kQKKeys<kRV>;
  const int64_t R = row1 - row0, D = c.head_dim;
  const size_t Dp = sc.Dp;

  float* qt = sc.qt.get();
  std::fill(qt, qt + size_t(D) * RP, 0.0f);
  int32_t* lo = sc.lo.get();
  int32_t* hi = sc.hi.get();
  TransposeQ(c, s, g, row0, R, RP, qt);
  for (size_t r = 0; r < RP; ++r) {
    if (int64_t(r) < R) {
      const RowRange rr = row_range(c, s, (row0 + r) / c.group);
      lo[r] = int32_t(rr.lo);
      hi[r] = int32_t(rr.hi);
    } else {  // padding lanes: zero q, never masked, never written
      lo[r] = 0;
      hi[r] = std::numeric_limits<int32_t>::max();
    }
  }
  const TileKeys keys = KeysOfTile(c, s, row0, row1, lo, hi, tile_skip_masked(c, s, g, row0, row1));
  // Blocks are scanned for large scores only where the rows' L1 norms and
  // the sequence's largest |K| do not already rule them out (one pass over
  // the tile's q rows instead of one over every block's scores).
  const double q1 = TileQ1Max(c, s, g, row0, R);
  const bool may_be_large = !scores_stay_below(c, s, q1, kExactScoresAbove);
  const bool ill_conditioned = ScoresIllConditioned(c, s, q1);

  VF m[kRV], l[kRV];
  hn::Vec<DI> lo_i[kRV], hi_i[kRV];
  for (int rv = 0; rv < kRV; ++rv) {
    m[rv] = hn::Set(df, -std::numeric_limits<float>::infinity());
    l[rv] = hn::Zero(df);
    lo_i[rv] = hn::Load(di, lo + rv * N);
    hi_i[rv] = hn::Load(di, hi + rv * N);
  }
  float* o = sc.o.get();
  // Rows of PV's register block: 8 where the tile's row vectors hold them;
  // 4 with 16 registers (AVX2), where PVRowsScaled kept 4 rows x 2
  // vectors: 6 loads per 8 FMAs instead of 8 x 1's 9 (float32 prefill, one
  // thread, warm: 72-77 against 75-82 ms, the same runs as kQKKeys'); now
  // 4 x 3 (kTilePVVectors).
  constexpr int kPVRows = kNarrowSimd ? 4 : 8;
  // Chunk-outer p.v on AVX2: prefill float32, one thread, warm (fast_bench,
  // minimum of 15-20 calls, ten interleaved rounds on the Zen 3 guest),
  // 69.5-75.6 against 72.9-80.6 ms; mixed unchanged. Not measured on
  // AVX-512, which keeps the row-group order it was tuned with.
  constexpr bool kPVChunkOuter = kNarrowSimd;
  const bool pv8 = RP >= size_t(kPVRows);
  const size_t RG = pv8 ? kPVRows : 4;
  const size_t Rr = (size_t(R) + RG - 1) / RG * RG;
  std::fill(o, o + Rr * Dp, 0.0f);
  float* st = sc.st.get();
  const ConvertFn convert = ConverterFor(c.kv_dtype);

  // The next block's K and V rows go into L2 a line at a time over this
  // block's q.k (L2LineStream), not in one burst before it: the burst
  // filled the line fill buffers and the loads behind it waited (perf: 6%
  // of the float32 tile's samples on the instruction after a prefetcht0).
  // On the Intel Xeon with AMX, the bench's prefill float32, 2 threads,
  // cold, eight alternated rounds, the stream and ExpFast (WeightExp)
  // together: 21.3-22.8 ms against 22.0-23.4 ms.
  const int64_t pf_bytes = (2 * D * c.kv_elem_bytes + 63) / 64 * 64;  // a key's K and V rows, whole lines
  const uint8_t* next_rows[kBlockKeys];
  const uint8_t* out_rows[kMaxTileRowVectors * hn::MaxLanes(DF())];
  for (int64_t b0 = keys.range.lo; b0 <= keys.range.hi; b0 += kBlockKeys) {
    const int64_t nb = std::min<int64_t>(kBlockKeys, keys.range.hi + 1 - b0);
    const int64_t nbp = (nb + kKC - 1) / kKC * kKC;
    const int64_t nb_next = std::clamp<int64_t>(keys.range.hi + 1 - b0 - kBlockKeys, 0, kBlockKeys);
    TokenRows(c, s, g, b0 + kBlockKeys, nb_next, next_rows);
    L2LineStream pf{.rows = next_rows, .j = 0, .j_end = nb_next, .bytes = pf_bytes};
    if (nb_next == 0) pf = OutputStream(c, s, g, row0, row1, out_rows);
    pf.Start();
    const int64_t pf_mask = StreamMask(nbp / kKC * (kRV / kQKRows<kRV>) * D, (pf.j_end - pf.j) * pf.bytes / 64);
    GatherBlock(c, s, g, b0, nb, kKC, sc, convert, sc.in_place);
    for (int64_t j0 = 0; j0 < nbp; j0 += kKC)
      QKBlockB<kRV>(qt, RP, sc.krow.data() + j0, D, c.sm_scale, st + j0 * RP, pf, pf_mask);
    pf.Rest();
    if (may_be_large)
      ExactTileScoresIfLarge(c, s, g, row0, R, nb, nbp, RP, sc.krow.data(), /*native=*/false, st, sc, ill_conditioned);

    const bool need_mask = b0 < keys.lo_max || b0 + nb - 1 > keys.hi_min;
    BlockSoftmaxB<kRV>(c, st, RP, b0, nb, nbp, need_mask, lo_i, hi_i, m, l, sc.alpha.get(), s.p_shift);
    if (pv8)
      PVTileRows<kPVRows, kPVChunkOuter>(o, Dp, sc.alpha.get(), st, RP, nb, sc.vrow.data(), Rr);
    else
      PVTileRows<4, kPVChunkOuter>(o, Dp, sc.alpha.get(), st, RP, nb, sc.vrow.data(), Rr);
  }
  float* lsum = sc.lsum.get();
  for (int rv = 0; rv < kRV; ++rv) hn::Store(l[rv], df, lsum + rv * N);
  for (int64_t r = 0; r < R; ++r) WriteRow(c, s, g, row0 + r, o + r * Dp, lsum[r]);
}

// ---------------------------------------------------------------- TileA
#if HWY_TARGET != HWY_SCALAR  // needs ConcatEven/ConcatOdd and at least 4 lanes
// Sums each of the N vectors v[i] into lane i of the result.
HWY_INLINE VF ReduceTree(DF df, VF* v) {
  for (size_t w = hn::Lanes(df); w > 1; w /= 2)
    for (size_t i = 0; i < w / 2; ++i)
      v[i] = hn::Add(hn::ConcatEven(df, v[2 * i + 1], v[2 * i]), hn::ConcatOdd(df, v[2 * i + 1], v[2 * i]));
  return v[0];
}

// Scores of 4 rows (q0: [4][Dp]) against N / 4 keys, lane jj * 4 + r.
template <DType kRow, bool kScaled>
HWY_INLINE VF QKGroup(const float* HWY_RESTRICT q0, size_t Dp, const uint8_t* const* kr, const RowRead& rd) {
  const DF df;
  constexpr size_t kN = hn::MaxLanes(df);
  const size_t N = hn::Lanes(df);
  const size_t KG = N / 4;
  VF acc[kN];
  for (size_t i = 0; i < N; ++i) acc[i] = hn::Zero(df);
  for (size_t d = 0; d < Dp; d += N) {
    VF q[4];
    for (int r = 0; r < 4; ++r) q[r] = hn::Load(df, q0 + r * Dp + d);
    for (size_t jj = 0; jj < KG; ++jj) {
      const VF k = LoadRow<kRow, kScaled>(df, kr[jj], d, rd);
      for (int r = 0; r < 4; ++r) acc[jj * 4 + r] = hn::MulAdd(q[r], k, acc[jj * 4 + r]);
    }
  }
  return ReduceTree(df, acc);
}

// Lane i of a TileGroup score vector is row i % 4 of a group of 4 rows (and
// key i / 4 of the register block). ReduceGroups combines the lanes of
// equal row with `op` (max or add), leaving the result in every lane of
// that row: log2(N / 4) lane permutations.
template <class Op>
HWY_INLINE VF ReduceGroups(DF df, VF v, const int32_t* perms, Op op) {
  const size_t N = hn::Lanes(df);
  const hn::RebindToSigned<DF> di;
  for (size_t step = 4, k = 0; step < N; step *= 2, ++k)
    v = op(v, hn::TableLookupLanes(v, hn::IndicesFromVec(df, hn::LoadU(di, perms + k * N))));
  return v;
}

// The state of a group item (TileGroup, GroupBf16): the keys it visits and,
// per (head, group of 4 rows), the online softmax in the score layout
// (lane i: row i % 4): lo / hi of the attended keys, the running max m and
// the unreduced sum l (lane i: a share of row i % 4).
struct GroupState {
  int64_t R = 0, NG = 0;  // rows per KV head, groups of 4
  TileKeys keys;
  int32_t* lo_p = nullptr;  // [NG][lanes]
  int32_t* hi_p = nullptr;
  float* m_p = nullptr;     // [nh][NG][lanes]
  float* l_p = nullptr;
  int32_t* perms = nullptr;  // ReduceGroups' lane permutations
  float p_shift = 0.0f;      // SeqPlan::p_shift
};

// The keys a group item over keys [k0, k1] of `s` visits: those of every
// row of the sequence, cut to [k0, k1]. Empty (lo > hi) where the item has
// none. Also what a thread looking ahead at the item reads (GroupBf16).
inline RowRange GroupKeyRange(const KernelCtx& c, const SeqPlan& s, int64_t k0, int64_t k1) {
  const RowRange r = VisitedKeys(c, s, 0, s.num_tokens * c.group, s.skip_masked);
  return {std::max(r.lo, k0), std::min(r.hi, k1)};
}

// Sets up the state of a group item over keys [k0, k1] of its range.
inline GroupState StartGroup(const KernelCtx& c, const SeqPlan& s, int64_t nh, int64_t k0, int64_t k1,
                             Scratch& sc) {
  const size_t N = hn::Lanes(DF());
  GroupState g;
  g.p_shift = s.p_shift;
  g.R = s.num_tokens * c.group;
  g.NG = (g.R + 3) / 4;
  int32_t* lo = sc.lo.get();
  int32_t* hi = sc.hi.get();
  for (int64_t r = 0; r < g.NG * 4; ++r) {
    if (r < g.R) {
      const RowRange rr = row_range(c, s, r / c.group);
      lo[r] = int32_t(rr.lo);
      hi[r] = int32_t(rr.hi);
    } else {
      lo[r] = 0;
      hi[r] = std::numeric_limits<int32_t>::max();
    }
  }
  g.keys = KeysOfTile(c, s, 0, g.R, lo, hi, s.skip_masked);
  g.keys.range = GroupKeyRange(c, s, k0, k1);
  g.lo_p = sc.lo_p.get();
  g.hi_p = sc.hi_p.get();
  g.m_p = sc.m_p.get();
  g.l_p = sc.l_p.get();
  g.perms = sc.perms.get();
  for (int64_t gi = 0; gi < g.NG; ++gi)
    for (size_t i = 0; i < N; ++i) g.lo_p[gi * N + i] = lo[gi * 4 + i % 4], g.hi_p[gi * N + i] = hi[gi * 4 + i % 4];
  for (int64_t i = 0; i < nh * g.NG * int64_t(N); ++i)
    g.m_p[i] = -std::numeric_limits<float>::infinity(), g.l_p[i] = 0.0f;
  for (size_t step = 4, k = 0; step < N; step *= 2, ++k)  // lane i -> i ^ step, for step = 4, 8, ... < N
    for (size_t i = 0; i < N; ++i) g.perms[k * N + i] = int32_t(i ^ step);
  return g;
}

// One block of (head h, group gi): sg holds the raw scores q.k of keys
// [b0, b0 + nq) as [key][4] (nq a multiple of lanes / 4); they become
// probabilities, with keys [nq, npad) set to -inf (p = 0): sm_scale, soft
// cap and mask (kernel.py:132-141), keys past the block's nb -inf; m_new =
// max(m, block max), a max of -inf used as 0 so rows with no finite score
// yet stay finite; p = e^(s - m_new - g.p_shift), l = l * e^(m - m_new) + sum p; the
// rows' rescale factors e^(m - m_new) in alpha's lanes 0..3. A NaN score
// makes its p NaN, so the row ends NaN whatever the max keeps.
inline void GroupBlockSoftmax(const KernelCtx& c, const GroupState& g, int64_t h, int64_t gi, float* HWY_RESTRICT sg,
                              int64_t nq, int64_t npad, int64_t b0, int64_t nb, bool need_mask, float* alpha) {
  const DF df;
  const DI di;
  const size_t N = hn::Lanes(df);
  const int64_t KG = int64_t(N / 4);
  const VF neg_inf = hn::Set(df, -std::numeric_limits<float>::infinity());
  const auto lo_v = hn::Load(di, g.lo_p + gi * int64_t(N));
  const auto hi_v = hn::Load(di, g.hi_p + gi * int64_t(N));
  const auto last_key = hn::Set(di, int32_t(b0 + nb - 1));
  const auto lane_key = hn::ShiftRight<2>(hn::Iota(di, 0));
  VF mb = neg_inf;
  for (int64_t j0 = 0; j0 < nq; j0 += KG) {
    VF v = hn::Mul(hn::Load(df, sg + j0 * 4), hn::Set(df, c.sm_scale));
    if (c.has_soft_cap) v = SoftCap(df, v, hn::Set(df, c.soft_cap));
    const auto key = hn::Add(hn::Set(di, int32_t(b0 + j0)), lane_key);
    if (need_mask) {
      const auto masked = hn::Or(hn::Lt(key, lo_v), hn::Gt(key, hi_v));
      v = hn::IfThenElse(hn::RebindMask(df, masked), hn::Add(v, hn::Set(df, c.mask_value)), v);
    }
    v = hn::IfThenElse(hn::RebindMask(df, hn::Gt(key, last_key)), neg_inf, v);
    hn::Store(v, df, sg + j0 * 4);
    mb = hn::Max(mb, v);
  }
  for (int64_t j0 = nq; j0 < npad; j0 += KG) hn::Store(neg_inf, df, sg + j0 * 4);
  float* mh = g.m_p + (h * g.NG + gi) * int64_t(N);
  float* lh = g.l_p + (h * g.NG + gi) * int64_t(N);
  const VF m_old = hn::Load(df, mh);
  const VF m_new = hn::Max(m_old, ReduceGroups(df, mb, g.perms, [](VF a, VF b) { return hn::Max(a, b); }));
  const VF m_use = hn::IfThenZeroElse(hn::Eq(m_new, neg_inf), m_new);
  const VF a = ExpKeepNaN(df, hn::Sub(m_old, m_use));
  hn::Store(m_new, df, mh);
  hn::Store(a, df, alpha);
  const VF shift = hn::Set(df, g.p_shift);
  VF ls = hn::Zero(df);
  for (int64_t j0 = 0; j0 < npad; j0 += KG) {
    const VF pv = ShiftedWeight(df, hn::Load(df, sg + j0 * 4), m_use, shift);
    hn::Store(pv, df, sg + j0 * 4);
    ls = hn::Add(ls, pv);
  }
  hn::Store(hn::MulAdd(hn::Load(df, lh), a, ls), df, lh);
}

// The item's rows: O / l cast to q's dtype, or (m, l, O) per row at
// `partial` for merge_partials. row_of(h, r, scratch) returns row r of
// head h's accumulator in head_dim order (possibly unpermuted into scratch).
template <class RowOf>
inline void FinishGroup(const KernelCtx& c, const SeqPlan& s, const GroupState& g, int64_t h0, int64_t nh,
                        float* partial, RowOf row_of) {
  const DF df;
  const size_t N = hn::Lanes(df);
  const int64_t D = c.head_dim;
  for (int64_t h = 0; h < nh; ++h) {
    for (int64_t gi = 0; gi < g.NG; ++gi) {
      HWY_ALIGN float lsum[hn::MaxLanes(df)];
      const float* mh = g.m_p + (h * g.NG + gi) * int64_t(N);
      hn::Store(ReduceGroups(df, hn::Load(df, g.l_p + (h * g.NG + gi) * int64_t(N)), g.perms,
                             [](VF a, VF b) { return hn::Add(a, b); }),
                df, lsum);
      for (int64_t r = gi * 4; r < std::min<int64_t>(g.R, gi * 4 + 4); ++r) {
        const float* orow = row_of(h, r);
        if (partial == nullptr) {
          WriteRow(c, s, h0 + h, r, orow, lsum[r % 4]);
        } else {
          float* dst = partial + (h * g.R + r) * (2 + D);
          dst[0] = mh[r % 4];
          dst[1] = lsum[r % 4];
          std::memcpy(dst + 2, orow, size_t(D) * sizeof(float));
        }
      }
    }
  }
}

// All rows (at most kMaxRowsA, in groups of 4) of KV heads [h0, h0 + nh)
// of a sequence, over keys [k0, k1] of their range. Each block's K and V
// rows are prefetched one block ahead, head by head, in short bursts spread
// over the block's work (a token's heads are contiguous in a page; a burst
// of a whole block of every head stalls the loads it competes with). The
// online softmax state of each group of 4 rows lives in vectors of the
// score layout (lane i: row i % 4), so no step of it is scalar.
// `partial`: null to write the output rows, else where to leave (m, l, O)
// per row for merge_partials (a sequence split into key chunks). `native`
// (head_dim a multiple of the lanes): K and V are read from the cache as
// kRow, widened and dequantised in registers; otherwise kRow is float32
// and each block is first converted.
template <DType kRow>
void TileGroup(const KernelCtx& c, const SeqPlan& s, int64_t h0, int64_t nh, int64_t k0, int64_t k1, float* partial,
               Scratch& sc, bool native) {
  const DF df;
  const size_t N = hn::Lanes(df);
  const size_t KG = N / 4;  // keys per register block
  const int64_t D = c.head_dim;
  const size_t Dp = sc.Dp;
  const GroupState g = StartGroup(c, s, nh, k0, k1, sc);
  const bool ill_conditioned = GroupScoresIllConditioned(c, s, h0, nh, g.R);
  const int64_t R = g.R, NG = g.NG;
  const TileKeys& keys = g.keys;
  const size_t rows_stride = size_t(NG) * 4 * Dp;  // one head's rows in qa / o

  float* qa = sc.qt.get();  // [nh][NG * 4][Dp], zero padded
  float* o = sc.o.get();    // [nh][NG * 4][Dp]
  std::fill(qa, qa + size_t(nh) * rows_stride, 0.0f);
  std::fill(o, o + size_t(nh) * rows_stride, 0.0f);
  for (int64_t h = 0; h < nh; ++h)
    for (int64_t r = 0; r < R; ++r)
      std::memcpy(qa + h * rows_stride + r * Dp, QRow(c, s, h0 + h, r), size_t(D) * sizeof(float));
  float* alpha = sc.alpha.get();

  float* sa = sc.st.get();  // [keys][4] for the group being computed
  const ConvertFn convert = ConverterFor(c.kv_dtype);
  const RowRead kread{native && c.has_k_scale, c.k_scale, c.q_dtype};
  const RowRead vread{native && c.has_v_scale, c.v_scale, c.q_dtype};
  const int64_t row_bytes = D * c.kv_elem_bytes;
  // K and V rows of head h of the tokens `tok[0 .. n)`, into L1.
  const auto prefetch_rows = [&](const uint8_t* const* tok, int64_t n, int64_t h) {
    for (int64_t j = 0; j < n; ++j) {
      const uint8_t* t = tok[j] + 2 * h * row_bytes;
      for (int64_t off = 0; off < 2 * row_bytes; off += 64) __builtin_prefetch(t + off, 0, 3);
    }
  };
  const uint8_t* tok_bufs[2][kGroupBlockKeys];
  const uint8_t** tok = tok_bufs[0];       // the block's tokens
  const uint8_t** tok_next = tok_bufs[1];  // the next block's
  TokenRows(c, s, h0, keys.range.lo, std::min<int64_t>(kGroupBlockKeys, keys.range.hi + 1 - keys.range.lo), tok);

  for (int64_t b0 = keys.range.lo; b0 <= keys.range.hi; b0 += kGroupBlockKeys) {
    const int64_t nb = std::min<int64_t>(kGroupBlockKeys, keys.range.hi + 1 - b0);
    const int64_t nbp = (nb + int64_t(KG) - 1) / int64_t(KG) * int64_t(KG);
    const int64_t nb_next = std::min<int64_t>(kGroupBlockKeys, keys.range.hi + 1 - (b0 + kGroupBlockKeys));
    if (nb_next > 0) TokenRows(c, s, h0, b0 + kGroupBlockKeys, nb_next, tok_next);
    for (int64_t j = 0; j < nb; ++j) {
      const uint8_t* t = tok[j];
      for (int64_t h = 0; h < nh; ++h) {
        uint8_t* const kd = reinterpret_cast<uint8_t*>(sc.kbuf.get() + (h * kGroupBlockKeys + j) * Dp);
        uint8_t* const vd = reinterpret_cast<uint8_t*>(sc.vbuf.get() + (h * kGroupBlockKeys + j) * Dp);
        if (native) {
          sc.krow[h * kGroupBlockKeys + j] = t + 2 * h * row_bytes;
          sc.vrow[h * kGroupBlockKeys + j] = t + (2 * h + 1) * row_bytes;
        } else {
          convert(t + 2 * h * row_bytes, D, Dp, c.has_k_scale, c.k_scale, c.q_dtype, reinterpret_cast<float*>(kd));
          convert(t + (2 * h + 1) * row_bytes, D, Dp, c.has_v_scale, c.v_scale, c.q_dtype,
                  reinterpret_cast<float*>(vd));
          sc.krow[h * kGroupBlockKeys + j] = kd;
          sc.vrow[h * kGroupBlockKeys + j] = vd;
        }
      }
    }
    const bool need_mask = b0 < keys.lo_max || b0 + nb - 1 > keys.hi_min;
    for (int64_t h = 0; h < nh; ++h) {
      // Ahead of their use: the next head's K and V rows (a head of a block
      // is a few KiB; a whole block of every head would not fit in L1
      // beside the one being read).
      if (h + 1 < nh) {
        prefetch_rows(tok, nb, h + 1);
      } else if (nb_next > 0) {
        prefetch_rows(tok_next, nb_next, 0);
      }
      const uint8_t* const* krow = sc.krow.data() + h * kGroupBlockKeys;
      const uint8_t* const* vrow = sc.vrow.data() + h * kGroupBlockKeys;
      for (int64_t gi = 0; gi < NG; ++gi) {
        const float* q0 = qa + h * rows_stride + gi * 4 * Dp;
        for (int64_t j0 = 0; j0 < nbp; j0 += int64_t(KG)) {
          // Keys past the block read zeros (their scores become -inf).
          const uint8_t* kr[hn::MaxLanes(df) / 4 + 1];
          for (size_t jj = 0; jj < KG; ++jj)
            kr[jj] = int64_t(j0 + jj) < nb ? krow[j0 + jj] : reinterpret_cast<const uint8_t*>(sc.zero.get());
          hn::Store(kread.scaled ? QKGroup<kRow, true>(q0, Dp, kr, kread) : QKGroup<kRow, false>(q0, Dp, kr, kread),
                    df, sa + j0 * 4);
        }
        ExactGroupScoresIfLarge(c, s, h0 + h, gi, R, nb, nbp, krow, native, sa, sc, ill_conditioned);
        GroupBlockSoftmax(c, g, h, gi, sa, nbp, nbp, b0, nb, need_mask, alpha);
        PVRows<4, kRow>(o + h * rows_stride + gi * 4 * Dp, Dp, alpha, sa, 4, nb, vrow, vread);
      }
    }
    std::swap(tok, tok_next);
  }
  FinishGroup(c, s, g, h0, nh, partial, [&](int64_t h, int64_t r) { return o + h * rows_stride + r * Dp; });
}

#endif  // HWY_TARGET != HWY_SCALAR

// Most rows per KV head that TileGroup takes (0: none on this target).
inline int64_t GroupRowsMax() {
  const int64_t N = int64_t(hn::Lanes(DF()));
#if HWY_TARGET != HWY_SCALAR
  if (N >= 4) return std::max<int64_t>(4, N / 2);
#endif
  (void)N;
  return 0;
}

}  // namespace rpa::fast::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // RPA_FAST_TILES_INL_H_
