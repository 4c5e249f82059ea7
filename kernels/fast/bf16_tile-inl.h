// The fast kernel's bfloat16 tile (AVX-512 targets with AVX512-BF16): q and KV both bfloat16, dot products by VDPBF16PS.
// Included once per target by simd_attention.cc through foreach_target.h; empty on other targets.
//
// The same tile as TileB (rows in lanes, Q transposed once per tile), with
// VDPBF16PS doing two bfloat16 products per float32 lane per instruction,
// twice the float32 FMA rate:
//  * q.k: bfloat16 pairs (K[key][d], K[key][d+1]) broadcast straight from
//    the cache page against Q^T pairs - K is never converted. bfloat16
//    products are exact in float32, so this is the float32 einsum
//    (kernel.py:131) up to summation order; the instruction treats subnormal
//    inputs (|x| < 2^-126) as zero, an error far below the bound.
//  * p.v: the probabilities are rounded to bfloat16 (what the reference's
//    softmax(...).astype(v.dtype) does, kernel.py:142) and paired over keys
//    against V rows interleaved pairwise once per block.
// Scores, softmax and accumulation stay float32.
#if defined(RPA_FAST_BF16_TILE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef RPA_FAST_BF16_TILE_INL_H_
#undef RPA_FAST_BF16_TILE_INL_H_
#else
#define RPA_FAST_BF16_TILE_INL_H_
#endif

#include <immintrin.h>

#include "hwy/highway.h"
#include "kernels/fast/tiles-inl.h"

HWY_BEFORE_NAMESPACE();
namespace rpa::fast::HWY_NAMESPACE {

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL

#define RPA_FAST_BF16_ATTR __attribute__((target(HWY_TARGET_STR ",avx512bf16")))

// The tile runs on 16-lane vectors (RunBf16Tile), at most four of rows.
inline bool Bf16TileApplies(const KernelCtx& c) {
  return c.bf16_dot && hn::Lanes(DF()) == 16 && c.q_dtype == DType::kBFloat16 && c.kv_dtype == DType::kBFloat16 &&
         !c.has_k_scale && !c.has_v_scale && c.head_dim > 0 && c.head_dim % 16 == 0;
}

// S^T[KC keys][RV x 16 rows] += (K pair broadcast) . (Q^T pairs).
template <int kRV>
RPA_FAST_BF16_ATTR HWY_INLINE void QKBf16(const uint32_t* HWY_RESTRICT qt2, size_t RP, const uint8_t* const* krow,
                                           int64_t D2, float sm, float* HWY_RESTRICT st) {
  constexpr int kKC = 16 / kRV;
  __m512 acc[kKC][kRV];
  for (int jj = 0; jj < kKC; ++jj)
    for (int rv = 0; rv < kRV; ++rv) acc[jj][rv] = _mm512_setzero_ps();
  const uint32_t* kr[kKC];
  for (int jj = 0; jj < kKC; ++jj) kr[jj] = reinterpret_cast<const uint32_t*>(krow[jj]);
  for (int64_t i = 0; i < D2; ++i) {
    __m512bh q[kRV];
    for (int rv = 0; rv < kRV; ++rv) q[rv] = (__m512bh)_mm512_load_si512(qt2 + i * RP + rv * 16);
    for (int jj = 0; jj < kKC; ++jj) {
      uint32_t word;
      std::memcpy(&word, kr[jj] + i, 4);
      const __m512bh k = (__m512bh)_mm512_set1_epi32(int(word));
      for (int rv = 0; rv < kRV; ++rv) acc[jj][rv] = _mm512_dpbf16_ps(acc[jj][rv], k, q[rv]);
    }
  }
  const __m512 vs = _mm512_set1_ps(sm);
  for (int jj = 0; jj < kKC; ++jj)
    for (int rv = 0; rv < kRV; ++rv) _mm512_store_ps(st + jj * RP + rv * 16, _mm512_mul_ps(acc[jj][rv], vs));
}

// (lo[i], hi[i]) as one 32-bit word per lane, from two 16-lane bfloat16 vectors.
RPA_FAST_BF16_ATTR HWY_INLINE __m512i PairWords(__m256i lo, __m256i hi) {
  return _mm512_or_si512(_mm512_cvtepu16_epi32(lo), _mm512_slli_epi32(_mm512_cvtepu16_epi32(hi), 16));
}

// O[4 rows][16 * kDV dims starting at dv0 * 16] = O * alpha + sum over key
// pairs of (p pair) . (V pair).
template <int kDV>
RPA_FAST_BF16_ATTR HWY_INLINE void PVBf16Chunk(float* HWY_RESTRICT o, int64_t D, const float* alpha,
                                                const uint32_t* HWY_RESTRICT pb, size_t RP, int64_t pairs,
                                                const uint32_t* HWY_RESTRICT v2, int64_t dv0) {
  __m512 acc[4][kDV];
  for (int r = 0; r < 4; ++r) {
    const __m512 a = _mm512_set1_ps(alpha[r]);
    for (int v = 0; v < kDV; ++v) acc[r][v] = _mm512_mul_ps(_mm512_load_ps(o + r * D + (dv0 + v) * 16), a);
  }
  for (int64_t jp = 0; jp < pairs; ++jp) {
    __m512bh vv[kDV];
    for (int v = 0; v < kDV; ++v) vv[v] = (__m512bh)_mm512_load_si512(v2 + jp * D + (dv0 + v) * 16);
    for (int r = 0; r < 4; ++r) {
      const __m512bh p = (__m512bh)_mm512_set1_epi32(int(pb[jp * RP + r]));
      for (int v = 0; v < kDV; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], p, vv[v]);
    }
  }
  for (int r = 0; r < 4; ++r)
    for (int v = 0; v < kDV; ++v) _mm512_store_ps(o + r * D + (dv0 + v) * 16, acc[r][v]);
}

template <int kRV>
RPA_FAST_BF16_ATTR void TileBf16(const KernelCtx& c, const SeqPlan& s, int64_t g, int64_t row0, int64_t row1,
                                 Scratch& sc) {
  const DI di;
  constexpr size_t RP = kRV * 16;
  constexpr int kKC = 16 / kRV;
  const int64_t R = row1 - row0, D = c.head_dim, D2 = D / 2;

  // Q^T as bfloat16 pairs: word [i][r] = (q[r][2i], q[r][2i+1]); q's values
  // are bfloat16, so the top halves of their float32 bits are exact.
  uint32_t* qt2 = reinterpret_cast<uint32_t*>(sc.qt.get());
  std::fill(qt2, qt2 + size_t(D2) * RP, 0u);
  int32_t* lo = sc.lo.get();
  int32_t* hi = sc.hi.get();
  for (size_t r = 0; r < RP; ++r) {
    if (int64_t(r) < R) {
      const float* q = QRow(c, s, g, row0 + r);
      for (int64_t i = 0; i < D2; ++i) {
        uint32_t a, b;
        std::memcpy(&a, q + 2 * i, 4);
        std::memcpy(&b, q + 2 * i + 1, 4);
        qt2[i * RP + r] = (a >> 16) | (b & 0xFFFF0000u);
      }
      const RowRange rr = row_range(c, s, (row0 + r) / c.group);
      lo[r] = int32_t(rr.lo);
      hi[r] = int32_t(rr.hi);
    } else {
      lo[r] = 0;
      hi[r] = std::numeric_limits<int32_t>::max();
    }
  }
  const TileKeys keys = KeysOfTile(c, s, row0, row1, lo, hi, tile_skip_masked(c, s, g, row0, row1));
  const bool ill_conditioned = ScoresIllConditioned(c, s, TileQ1Max(c, s, g, row0, R));

  VF m[kRV], l[kRV];
  hn::Vec<DI> lo_i[kRV], hi_i[kRV];
  for (int rv = 0; rv < kRV; ++rv) {
    m[rv] = hn::Set(DF(), -std::numeric_limits<float>::infinity());
    l[rv] = hn::Zero(DF());
    lo_i[rv] = hn::Load(di, lo + rv * 16);
    hi_i[rv] = hn::Load(di, hi + rv * 16);
  }
  float* o = sc.o.get();  // [R4][D]
  const size_t R4 = (size_t(R) + 3) / 4 * 4;
  std::fill(o, o + R4 * size_t(D), 0.0f);
  float* st = sc.st.get();
  uint32_t* pb = reinterpret_cast<uint32_t*>(sc.vbuf.get());  // [kBlockKeys / 2][RP]
  uint32_t* v2 = reinterpret_cast<uint32_t*>(sc.kbuf.get());  // [kBlockKeys / 2][D]
  const ConvertFn convert = ConverterFor(c.kv_dtype);
  const uint8_t* zero = reinterpret_cast<const uint8_t*>(sc.zero.get());

  for (int64_t b0 = keys.range.lo; b0 <= keys.range.hi; b0 += kBlockKeys) {
    const int64_t nb = std::min<int64_t>(kBlockKeys, keys.range.hi + 1 - b0);
    const int64_t nbp = (nb + kKC - 1) / kKC * kKC;
    if (b0 + kBlockKeys <= keys.range.hi)
      PrefetchBlock(c, s, g, b0 + kBlockKeys, std::min<int64_t>(kBlockKeys, keys.range.hi + 1 - b0 - kBlockKeys));
    GatherBlock(c, s, g, b0, nb, kKC, sc, convert, /*native=*/true);
    for (int64_t j0 = 0; j0 < nbp; j0 += kKC) QKBf16<kRV>(qt2, RP, sc.krow.data() + j0, D2, c.sm_scale, st + j0 * RP);
    ExactTileScoresIfLarge(c, s, g, row0, R, nb, nbp, RP, sc.krow.data(), /*native=*/true, st, sc,
                           ill_conditioned);
    const bool need_mask = b0 < keys.lo_max || b0 + nb - 1 > keys.hi_min;
    BlockSoftmaxB<kRV>(c, st, RP, b0, nb, nbp, need_mask, lo_i, hi_i, m, l, sc.alpha.get(), s.p_shift);

    // p.astype(bfloat16) in key pairs, and V interleaved pairwise.
    const int64_t pairs = (nb + 1) / 2;
    for (int64_t jp = 0; jp < pairs; ++jp) {
      const bool second = 2 * jp + 1 < nb;
      for (int rv = 0; rv < kRV; ++rv) {
        const __m256i a = (__m256i)_mm512_cvtneps_pbh(_mm512_load_ps(st + 2 * jp * RP + rv * 16));
        const __m256i b =
            second ? (__m256i)_mm512_cvtneps_pbh(_mm512_load_ps(st + (2 * jp + 1) * RP + rv * 16)) : _mm256_setzero_si256();
        _mm512_store_si512(pb + jp * RP + rv * 16, PairWords(a, b));
      }
      const uint8_t* va = sc.vrow[2 * jp];
      const uint8_t* vb = second ? sc.vrow[2 * jp + 1] : zero;
      for (int64_t d = 0; d < D; d += 16) {
        const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(va + 2 * d));
        const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(vb + 2 * d));
        _mm512_store_si512(v2 + jp * D + d, PairWords(a, b));
      }
    }
    const int64_t dvs = D / 16;
    for (size_t r0 = 0; r0 < R4; r0 += 4) {
      int64_t dv0 = 0;
      for (; dv0 + 4 <= dvs; dv0 += 4)
        PVBf16Chunk<4>(o + r0 * D, D, sc.alpha.get() + r0, pb + r0, RP, pairs, v2, dv0);
      for (; dv0 < dvs; ++dv0) PVBf16Chunk<1>(o + r0 * D, D, sc.alpha.get() + r0, pb + r0, RP, pairs, v2, dv0);
    }
  }
  float* lsum = sc.lsum.get();
  for (int rv = 0; rv < kRV; ++rv) hn::Store(l[rv], DF(), lsum + rv * 16);
  for (int64_t r = 0; r < R; ++r) WriteRow(c, s, g, row0 + r, o + r * D, lsum[r]);
}

// Runs a tile item on the bfloat16 path if it applies; false otherwise.
inline bool RunBf16Tile(const KernelCtx& c, const SeqPlan& s, int64_t g, int64_t row0, int64_t row1, Scratch& sc) {
  if (!Bf16TileApplies(c)) return false;
  const int64_t rv = (row1 - row0 + 15) / 16;
  if (rv <= 1) TileBf16<1>(c, s, g, row0, row1, sc);
  else if (rv <= 2) TileBf16<2>(c, s, g, row0, row1, sc);
  else TileBf16<4>(c, s, g, row0, row1, sc);
  return true;
}

#undef RPA_FAST_BF16_ATTR
#else
inline bool Bf16TileApplies(const KernelCtx&) { return false; }
inline bool RunBf16Tile(const KernelCtx&, const SeqPlan&, int64_t, int64_t, int64_t, Scratch&) { return false; }
#endif  // AVX3

}  // namespace rpa::fast::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // RPA_FAST_BF16_TILE_INL_H_
