// The fast kernel's decode item for AVX2 targets: few rows per KV head over float32, bfloat16 or 8-bit float KV, in 16 registers.
// Included once per target by simd_attention.cc through foreach_target.h; empty on other targets.
//
// TileGroup's work (the rows of a few KV heads of one sequence, key chunk
// [k0, k1]) written for AVX2's 16 vector registers, where the generic item
// spends its time elsewhere than in FMAs: its p.v kept 16 accumulators
// beside the V vectors (spilled), and its q.k widened K eight elements at a
// time and reduced two keys' scores through eight-lane permutation trees.
//  * K and V are read where they lie, 16 elements a step as two vectors:
//    float32 as two loads; bfloat16 as one 32-byte load, the even elements
//    the words shifted left by 16 and the odd ones the words with the low
//    half cleared (bfloat16 is the top half of a float32: exact); 8-bit
//    floats through float16 (LoadFp8x16), in order. q is
//    stored in that order once per item and p.v's accumulator is put back
//    in head_dim order at the end, so no permutation runs per key.
//  * q.k: 2 keys x 4 rows, eight accumulators, q a memory operand of each
//    FMA; the eight sums are reduced by VHADDPS into one vector in the
//    group softmax's layout (lane i: key i / 4, row i % 4). Products and
//    sums are float32 as the einsum (kernel.py:131) promotes bfloat16 K.
//  * p.v: 4 rows x 16 dims, eight accumulators, the float32 probabilities
//    broadcast from memory. (The reference casts them to V's dtype first,
//    kernel.py:142 - within the tolerance bound, as in TileGroup.)
//  * Prefetch: the next block into L2, a line per q.k chunk step and per
//    key of every other p.v chunk (a block's rows of a token are
//    contiguous in the page: nh heads x 2 rows), which for bfloat16 KV
//    spreads the block evenly over the arithmetic. Bursts of L1 prefetches
//    of the next head's rows, as TileGroup issues, were slower here
//    (fast_bench decode q float32, bfloat16 KV, 2 threads, cold: about
//    1.6 ms with them, 1.4 ms without; p.v issuing no L2 lines: 1.5 ms).
// Scales with q other than float32 or bfloat16, other KV dtypes and
// head_dim not a multiple of 16 take TileGroup. For 8-bit floats, in
// fast_bench (decode, 2 threads, cold, medians of 5 in three interleaved
// rounds, q float32 / bfloat16): TileGroup 3.05 / 2.93 ms, this item
// 1.50-1.62 / 1.56-1.58 ms.
#if defined(RPA_FAST_AVX2_GROUP_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef RPA_FAST_AVX2_GROUP_INL_H_
#undef RPA_FAST_AVX2_GROUP_INL_H_
#else
#define RPA_FAST_AVX2_GROUP_INL_H_
#endif

#include <immintrin.h>

#include <cmath>
#include <limits>

#include "hwy/highway.h"
#include "kernels/fast/tiles-inl.h"

HWY_BEFORE_NAMESPACE();
namespace rpa::fast::HWY_NAMESPACE {

#if HWY_TARGET == HWY_AVX2

// Whether the AVX2 item runs a group item of `s`. With k_scale or v_scale
// only for float32 and bfloat16 q: the reference dequantises to q's dtype
// (kernel.py:124-129), the float32 product x * scale (Avx2Multipliers)
// that for bfloat16 q is then rounded (KvDequant).
inline bool Avx2GroupTakes(const KernelCtx& c, const SeqPlan& s) {
  const bool dtype_ok = c.kv_dtype == DType::kFloat32 || c.kv_dtype == DType::kBFloat16 ||
                        c.kv_dtype == DType::kFloat8E5M2 || c.kv_dtype == DType::kFloat8E4M3FN;
  const bool scales_ok = (!c.has_k_scale && !c.has_v_scale) || c.q_dtype == DType::kFloat32 ||
                         c.q_dtype == DType::kBFloat16;
  return c.decode_item && dtype_ok && scales_ok && c.head_dim > 0 && c.head_dim % 16 == 0 &&
         s.num_tokens * c.group <= 4;
}

template <DType kKv>
inline constexpr int kElemBytes = kKv == DType::kFloat32 ? 4 : kKv == DType::kBFloat16 ? 2 : 1;

// 16 8-bit floats at p as float32 through float16 (F16C's VCVTPH2PS, which
// widens float16 subnormals in hardware: a float32 subnormal operand, as a
// shift of the byte into float32's fields then a multiply by a power of two
// would make, costs a microcode assist per multiply on Zen 3 - the decode
// took 1.7-2.3 ms with it, 1.4-1.8 ms without).
//  * float8_e5m2 is float16's top byte: exact, Inf and NaN included.
//  * float8_e4m3fn's exponent and mantissa bits placed under float16's
//    exponent field's top bit (sign at bit 15, bit 14 clear) read as
//    float16 are the value times 2^-8, normals and subnormals alike (bias
//    15 against 7; a subnormal's m x 2^-9 is float16's m x 2^-17). The
//    caller multiplies q and the probabilities by 2^8 instead (exact, see
//    kFp8Scale). NaN (exponent and mantissa all ones) would read as
//    1.875 x 2^-8: with kNan such words are set to all ones (a float16
//    NaN), three more operations per 16 elements, run only where the
//    sequence's KV is not known finite (SeqPlan::k_finite, from the
//    cache's statistics).
template <DType kKv, bool kNan>
HWY_INLINE void LoadFp8x16(const uint8_t* HWY_RESTRICT p, __m256& a, __m256& b) {
  const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  __m128i lo, hi;
  if constexpr (kKv == DType::kFloat8E5M2) {
    lo = _mm_unpacklo_epi8(_mm_setzero_si128(), x);
    hi = _mm_unpackhi_epi8(_mm_setzero_si128(), x);
  } else {
    __m256i w = _mm256_and_si256(_mm256_slli_epi16(_mm256_cvtepi8_epi16(x), 7), _mm256_set1_epi16(int16_t(0xBF80)));
    if constexpr (kNan) {  // 0x3F80 under the sign: the byte's exponent and mantissa all ones
      const __m256i em = _mm256_set1_epi16(0x3F80);
      w = _mm256_or_si256(w, _mm256_cmpeq_epi16(_mm256_and_si256(w, em), em));
    }
    lo = _mm256_castsi256_si128(w);
    hi = _mm256_extracti128_si256(w, 1);
  }
  a = _mm256_cvtph_ps(lo);
  b = _mm256_cvtph_ps(hi);
}

// What Load16 leaves out of every element of kKv: the value is Load16's
// times kFp8Scale. q and the probabilities are multiplied by it instead -
// exact (a power of two, no overflow where QFitsScale), and each product
// (x * 2^8) * (k * 2^-8) is the product x * k, so every FMA rounds as it
// would on the values.
template <DType kKv>
inline constexpr float kFp8Scale = kKv == DType::kFloat8E4M3FN ? 256.0f : 1.0f;

// Whether x times `scale` (a power of two >= 1) is finite wherever x is:
// then the product is exact. Inf and NaN stay what they are.
inline bool StaysFiniteTimes(float x, float scale) {
  return !(std::isfinite(x) && std::fabs(x) > std::numeric_limits<float>::max() / scale);  // max / scale: exact
}

// Whether every q element of the item's rows StaysFiniteTimes `scale`.
inline bool QFitsScale(const KernelCtx& c, const SeqPlan& s, int64_t h0, int64_t nh, float scale) {
  if (scale == 1.0f) return true;
  for (int64_t h = 0; h < nh; ++h)
    for (int64_t r = 0; r < s.num_tokens * c.group; ++r) {
      const float* q = QRow(c, s, h0 + h, r);
      for (int64_t d = 0; d < c.head_dim; ++d)
        if (!StaysFiniteTimes(q[d], scale)) return false;
    }
  return true;
}

// 16 elements of a row of kKv at p as two float32 vectors: float32 and
// 8-bit floats in order (the latter divided by kFp8Scale); bfloat16 even
// elements in a, odd ones in b. kNan: as LoadFp8x16 takes it.
template <DType kKv, bool kNan>
HWY_INLINE void Load16(const uint8_t* HWY_RESTRICT p, __m256& a, __m256& b) {
  if constexpr (kKv == DType::kFloat32) {
    a = _mm256_loadu_ps(reinterpret_cast<const float*>(p));
    b = _mm256_loadu_ps(reinterpret_cast<const float*>(p) + 8);
  } else if constexpr (kKv == DType::kBFloat16) {
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    a = _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
    b = _mm256_castsi256_ps(_mm256_and_si256(w, _mm256_set1_epi32(int(0xFFFF0000u))));
  } else {
    LoadFp8x16<kKv, kNan>(p, a, b);
  }
}

// The element of a 16-element chunk that position i (0..15) of Load16's
// a, b (a first) holds.
template <DType kKv>
inline constexpr int64_t Load16Dim(int64_t i) {
  return kKv != DType::kBFloat16 ? i : (i < 8 ? 2 * i : 2 * (i - 8) + 1);
}

// What the item computes with, from Load16's values x.
enum class KvDequant {
  kCarried,     // x itself; q and the probabilities carry kFp8Scale
  kScaled,      // x * m in one float32 rounding (m from Avx2Multipliers): float32 q
  kScaledBf16,  // that product rounded to bfloat16: .astype(q.dtype) for bfloat16 q (kernel.py:125-129)
};
template <KvDequant kMode>
HWY_INLINE __m256 Dequant(__m256 x, __m256 m) {
  if constexpr (kMode == KvDequant::kCarried) return x;
  const __m256 p = _mm256_mul_ps(x, m);
  if constexpr (kMode == KvDequant::kScaled) return p;
  return RoundToQ(DF(), DType::kBFloat16, VF{p}).raw;  // the generic items' rounding: RNE, NaN kept
}

// Keeps v in a register: GCC otherwise folds a load used by two FMAs into
// both as memory operands, two loads instead of one.
HWY_INLINE void InRegister(__m256& v) { asm("" : "+x"(v)); }

// Lane i of the result = the sum of the 8 lanes of v[i].
HWY_INLINE __m256 SumEach8(const __m256* v) {
  // hadd(a, b) = a0+a1, a2+a3, b0+b1, b2+b3 | the same of lanes 4..7.
  const __m256 g0 = _mm256_hadd_ps(_mm256_hadd_ps(v[0], v[1]), _mm256_hadd_ps(v[2], v[3]));
  const __m256 g1 = _mm256_hadd_ps(_mm256_hadd_ps(v[4], v[5]), _mm256_hadd_ps(v[6], v[7]));
  // g0: lanes 0..3 the low-half sums of v[0..3], lanes 4..7 their high-half sums.
  return _mm256_add_ps(_mm256_permute2f128_ps(g0, g1, 0x20), _mm256_permute2f128_ps(g0, g1, 0x31));
}

// Raw scores q.k of keys k0, k1 x 4 rows (qh: [4][D] in Load16 order),
// lane t * 4 + r. One line of the next block's L2 stream per chunk.
template <DType kKv, bool kNan, KvDequant kMode>
HWY_INLINE __m256 QK2x4(const float* HWY_RESTRICT qh, int64_t D, const uint8_t* k0, const uint8_t* k1, __m256 km,
                        L2LineStream& pf) {
  __m256 acc[8];
  for (int i = 0; i < 8; ++i) acc[i] = _mm256_setzero_ps();
  for (int64_t c0 = 0; c0 < D; c0 += 16) {
    pf.Next();
    __m256 a[2], b[2];
    Load16<kKv, kNan>(k0 + c0 * kElemBytes<kKv>, a[0], b[0]);
    Load16<kKv, kNan>(k1 + c0 * kElemBytes<kKv>, a[1], b[1]);
    for (int t = 0; t < 2; ++t) a[t] = Dequant<kMode>(a[t], km), b[t] = Dequant<kMode>(b[t], km);
    // Each q vector loaded once for both keys: 8 q loads per 16 FMAs
    // instead of 16 (two 256-bit loads a cycle on Zen 3).
    const __m256* half[2] = {a, b};  // q's elements c0 .. c0 + 7, then c0 + 8 .. c0 + 15
    for (int hf = 0; hf < 2; ++hf)
      for (int r = 0; r < 4; ++r) {
        __m256 q = _mm256_load_ps(qh + r * D + c0 + 8 * hf);
        InRegister(q);
        acc[r] = _mm256_fmadd_ps(q, half[hf][0], acc[r]);
        acc[4 + r] = _mm256_fmadd_ps(q, half[hf][1], acc[4 + r]);
      }
  }
  return SumEach8(acc);
}

// o[4 rows][16 dims at c0, Load16 order] = o * alpha + sum over keys j < nb
// of p[j][r] * V[j] (p: [key][4] float32 probabilities; V as Dequant<kMode> makes it).
template <DType kKv, bool kNan, KvDequant kMode>
HWY_INLINE void PV4x16(float* HWY_RESTRICT o, int64_t D, int64_t c0, const float* alpha,
                       const float* HWY_RESTRICT p, int64_t nb, const uint8_t* const* vrow, __m256 vm, L2LineStream& pf,
                       bool stream) {
  __m256 acc[4][2];
  for (int r = 0; r < 4; ++r) {
    const __m256 a = _mm256_broadcast_ss(alpha + r);
    acc[r][0] = _mm256_mul_ps(_mm256_load_ps(o + r * D + c0), a);
    acc[r][1] = _mm256_mul_ps(_mm256_load_ps(o + r * D + c0 + 8), a);
  }
  for (int64_t j = 0; j < nb; ++j) {
    if (stream) pf.Next();
    __m256 va, vb;
    Load16<kKv, kNan>(vrow[j] + c0 * kElemBytes<kKv>, va, vb);
    va = Dequant<kMode>(va, vm), vb = Dequant<kMode>(vb, vm);
    for (int r = 0; r < 4; ++r) {
      const __m256 pr = _mm256_broadcast_ss(p + j * 4 + r);
      acc[r][0] = _mm256_fmadd_ps(pr, va, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(pr, vb, acc[r][1]);
    }
  }
  for (int r = 0; r < 4; ++r) {
    _mm256_store_ps(o + r * D + c0, acc[r][0]);
    _mm256_store_ps(o + r * D + c0 + 8, acc[r][1]);
  }
}

// The item; see TileGroup for the arguments. At most 4 rows per head.
// K and V are Dequant<kMode>'d with km and vm as they are read; with
// kCarried q and the probabilities carry kFp8Scale. kNan: as LoadFp8x16 takes it.
template <DType kKv, bool kNan, KvDequant kMode>
void GroupAvx2(const KernelCtx& c, const SeqPlan& s, int64_t h0, int64_t nh, int64_t k0, int64_t k1, float km,
               float vm, float* partial, Scratch& sc) {
  constexpr int64_t KG = 2;  // keys per score vector
  constexpr int kE = kElemBytes<kKv>;
  constexpr float kCarried = kMode == KvDequant::kCarried ? kFp8Scale<kKv> : 1.0f;  // on q and the probabilities
  const __m256 km_v = _mm256_set1_ps(km), vm_v = _mm256_set1_ps(vm);
  const int64_t D = c.head_dim;
  const GroupState g = StartGroup(c, s, nh, k0, k1, sc);
  const bool ill_conditioned = GroupScoresIllConditioned(c, s, h0, nh, g.R);
  const TileKeys& keys = g.keys;
  const size_t rows_stride = size_t(4 * D);  // one head's rows in qa / o

  float* qa = sc.qt.get();  // [nh][4][D] in Load16 order, rows past R zero
  float* o = sc.o.get();    // [nh][4][D] in Load16 order
  std::fill(qa, qa + size_t(nh) * rows_stride, 0.0f);
  std::fill(o, o + size_t(nh) * rows_stride, 0.0f);
  for (int64_t h = 0; h < nh; ++h)
    for (int64_t r = 0; r < g.R; ++r) {
      const float* q = QRow(c, s, h0 + h, r);
      float* dst = qa + h * rows_stride + r * D;
      for (int64_t c0 = 0; c0 < D; c0 += 16)
        for (int64_t i = 0; i < 16; ++i) dst[c0 + i] = q[c0 + Load16Dim<kKv>(i)] * kCarried;
    }
  float* alpha = sc.alpha.get();
  float* sa = sc.st.get();  // [keys][4]
  const uint8_t* zero = reinterpret_cast<const uint8_t*>(sc.zero.get());
  const int64_t row_bytes = D * kE;
  // A token's K and V rows of the item's heads, in whole lines for the L2
  // stream (8-bit rows of 16 elements x an odd nh end mid-line).
  const int64_t token_bytes = (2 * nh * row_bytes + 63) / 64 * 64;

  const uint8_t* tok_bufs[2][kGroupBlockKeys];
  const uint8_t** tok = tok_bufs[0];       // the block's tokens (K of head h0)
  const uint8_t** tok_next = tok_bufs[1];  // the next block's
  TokenRows(c, s, h0, keys.range.lo, std::min<int64_t>(kGroupBlockKeys, keys.range.hi + 1 - keys.range.lo), tok);
  // The first block's rows of head 0 into L1; later blocks arrive through the L2 stream.
  for (int64_t j = 0; j < std::min<int64_t>(kGroupBlockKeys, keys.range.hi + 1 - keys.range.lo); ++j)
    for (int64_t off = 0; off < 2 * row_bytes; off += 64) __builtin_prefetch(tok[j] + off, 0, 3);

  for (int64_t b0 = keys.range.lo; b0 <= keys.range.hi; b0 += kGroupBlockKeys) {
    const int64_t nb = std::min<int64_t>(kGroupBlockKeys, keys.range.hi + 1 - b0);
    const int64_t nbp = (nb + KG - 1) / KG * KG;
    const int64_t nb_next = std::min<int64_t>(kGroupBlockKeys, keys.range.hi + 1 - (b0 + kGroupBlockKeys));
    if (nb_next > 0) TokenRows(c, s, h0, b0 + kGroupBlockKeys, nb_next, tok_next);
    const bool need_mask = b0 < keys.lo_max || b0 + nb - 1 > keys.hi_min;
    for (int64_t h = 0; h < nh; ++h) {
      // This head's share of the next block's lines into L2, spread over its q.k.
      const int64_t per = (nb_next + nh - 1) / nh;
      L2LineStream pf{.rows = tok_next, .j = h * per, .j_end = std::min(nb_next, (h + 1) * per), .bytes = token_bytes};
      pf.Start();
      const int64_t hoff = 2 * h * row_bytes;
      const uint8_t* kh[kGroupBlockKeys];
      const uint8_t* vh[kGroupBlockKeys];
      for (int64_t j = 0; j < nb; ++j) kh[j] = tok[j] + hoff, vh[j] = tok[j] + hoff + row_bytes;
      const float* qh = qa + h * rows_stride;
      for (int64_t j0 = 0; j0 < nbp; j0 += KG) {
        const uint8_t* k1p = j0 + 1 < nb ? kh[j0 + 1] : zero;  // keys past the block read zeros (-inf later)
        _mm256_store_ps(sa + j0 * 4, QK2x4<kKv, kNan, kMode>(qh, D, kh[j0], k1p, km_v, pf));
      }
      ExactGroupScoresIfLarge(c, s, h0 + h, 0, g.R, nb, nbp, kh, /*native=*/true, sa, sc, ill_conditioned);
      GroupBlockSoftmax(c, g, h, 0, sa, nbp, nbp, b0, nb, need_mask, alpha);
      if constexpr (kCarried != 1.0f)  // after l took its sum
        for (int64_t i = 0; i < nbp * 4; i += 8)
          _mm256_store_ps(sa + i, _mm256_mul_ps(_mm256_load_ps(sa + i), _mm256_set1_ps(kCarried)));
      float* oh = o + h * rows_stride;
      for (int64_t c0 = 0; c0 < D; c0 += 16)
        PV4x16<kKv, kNan, kMode>(oh, D, c0, alpha, sa, nb, vh, vm_v, pf, (c0 / 16) % 2 == 0);
      pf.Rest();
    }
    std::swap(tok, tok_next);
  }
  HWY_ALIGN float row[1024];  // head_dim <= 1024 here; larger rows use the K scratch
  float* ordered = D <= 1024 ? row : sc.kbuf.get();
  FinishGroup(c, s, g, h0, nh, partial, [&](int64_t h, int64_t r) {
    const float* acc = o + h * rows_stride + r * D;
    if constexpr (kKv != DType::kBFloat16) return acc;
    for (int64_t c0 = 0; c0 < D; c0 += 16)
      for (int64_t i = 0; i < 16; ++i) ordered[c0 + Load16Dim<kKv>(i)] = acc[c0 + i];
    return static_cast<const float*>(ordered);
  });
}

// With k_scale or v_scale: what K and V as Load16 reads them
// are multiplied by, each scale (1 where absent) times kFp8Scale: a power
// of two, so the multiplier is exact where it stays finite, and Load16's
// value times it is the value times the scale in one float32 rounding -
// x.astype(f32) * scale as the reference dequantises (kernel.py:124-129),
// Inf, NaN and signed zeros included. False where a finite scale times
// kFp8Scale overflows (the generic item runs).
template <DType kKv>
inline bool Avx2Multiplier(float scale, float& m) {
  if (!StaysFiniteTimes(scale, kFp8Scale<kKv>)) return false;
  m = scale * kFp8Scale<kKv>;
  return true;
}
template <DType kKv>
inline bool Avx2Multipliers(const KernelCtx& c, float& km, float& vm) {
  return Avx2Multiplier<kKv>(c.has_k_scale ? c.k_scale : 1.0f, km) &&
         Avx2Multiplier<kKv>(c.has_v_scale ? c.v_scale : 1.0f, vm);
}

template <DType kKv, bool kNan>
bool RunAvx2GroupOf(const KernelCtx& c, const SeqPlan& s, int64_t h0, int64_t nh, int64_t k0, int64_t k1,
                    float* partial, Scratch& sc) {
  if (c.has_k_scale || c.has_v_scale) {
    float km = 1.0f, vm = 1.0f;
    if (!Avx2Multipliers<kKv>(c, km, vm)) return false;
    if (c.q_dtype == DType::kBFloat16)
      GroupAvx2<kKv, kNan, KvDequant::kScaledBf16>(c, s, h0, nh, k0, k1, km, vm, partial, sc);
    else
      GroupAvx2<kKv, kNan, KvDequant::kScaled>(c, s, h0, nh, k0, k1, km, vm, partial, sc);
    return true;
  }
  if (!QFitsScale(c, s, h0, nh, kFp8Scale<kKv>)) return false;
  GroupAvx2<kKv, kNan, KvDequant::kCarried>(c, s, h0, nh, k0, k1, 1.0f, 1.0f, partial, sc);
  return true;
}

inline bool RunAvx2Group(const KernelCtx& c, const SeqPlan& s, int64_t h0, int64_t nh, int64_t k0, int64_t k1,
                         float* partial, Scratch& sc) {
  if (!Avx2GroupTakes(c, s)) return false;
  switch (c.kv_dtype) {
    case DType::kFloat32: return RunAvx2GroupOf<DType::kFloat32, false>(c, s, h0, nh, k0, k1, partial, sc);
    case DType::kBFloat16: return RunAvx2GroupOf<DType::kBFloat16, false>(c, s, h0, nh, k0, k1, partial, sc);
    case DType::kFloat8E4M3FN:
      return s.k_finite ? RunAvx2GroupOf<DType::kFloat8E4M3FN, false>(c, s, h0, nh, k0, k1, partial, sc)
                        : RunAvx2GroupOf<DType::kFloat8E4M3FN, true>(c, s, h0, nh, k0, k1, partial, sc);
    default: return RunAvx2GroupOf<DType::kFloat8E5M2, false>(c, s, h0, nh, k0, k1, partial, sc);
  }
}

// Test hook: the 16 elements of KV (kv) at src as the item computes with
// them, in head_dim order: with a scale as Dequant makes them for q's
// dtype (float32 or bfloat16), without one Load16's values times
// kFp8Scale (what q and the probabilities carry: kScaled's product with
// m = kFp8Scale). finite_kv: the read of a sequence whose KV is known
// finite (float8_e4m3fn's NaN patterns then read as finite numbers), else
// of one that may hold NaN. False where the item does not take the pair or
// the scale.
template <DType kKv, KvDequant kMode>
inline void KvRowAsComputed(bool finite_kv, const uint8_t* src, float m, float* dst) {
  __m256 a, b;
  if (finite_kv)
    Load16<kKv, false>(src, a, b);
  else
    Load16<kKv, true>(src, a, b);
  const __m256 mv = _mm256_set1_ps(m);
  a = Dequant<kMode>(a, mv), b = Dequant<kMode>(b, mv);
  HWY_ALIGN float t[16];
  _mm256_store_ps(t, a);
  _mm256_store_ps(t + 8, b);
  for (int64_t i = 0; i < 16; ++i) dst[Load16Dim<kKv>(i)] = t[i];
}
template <DType kKv>
inline bool KvRowAsComputedOf(DType q, bool scaled, float scale, bool finite_kv, const uint8_t* src, float* dst) {
  if (!scaled) {
    KvRowAsComputed<kKv, KvDequant::kScaled>(finite_kv, src, kFp8Scale<kKv>, dst);
    return true;
  }
  float m = 1.0f;
  if (!Avx2Multiplier<kKv>(scale, m)) return false;
  if (q == DType::kFloat32) {
    KvRowAsComputed<kKv, KvDequant::kScaled>(finite_kv, src, m, dst);
  } else if (q == DType::kBFloat16) {
    KvRowAsComputed<kKv, KvDequant::kScaledBf16>(finite_kv, src, m, dst);
  } else {
    return false;
  }
  return true;
}
inline bool Avx2KvRowForTest(DType kv, DType q, bool scaled, float scale, bool finite_kv, const uint8_t* src,
                             float* dst) {
  switch (kv) {
    case DType::kFloat32: return KvRowAsComputedOf<DType::kFloat32>(q, scaled, scale, finite_kv, src, dst);
    case DType::kBFloat16: return KvRowAsComputedOf<DType::kBFloat16>(q, scaled, scale, finite_kv, src, dst);
    case DType::kFloat8E4M3FN: return KvRowAsComputedOf<DType::kFloat8E4M3FN>(q, scaled, scale, finite_kv, src, dst);
    case DType::kFloat8E5M2: return KvRowAsComputedOf<DType::kFloat8E5M2>(q, scaled, scale, finite_kv, src, dst);
    default: return false;
  }
}

#else
inline bool Avx2KvRowForTest(DType, DType, bool, float, bool, const uint8_t*, float*) { return false; }
inline bool RunAvx2Group(const KernelCtx&, const SeqPlan&, int64_t, int64_t, int64_t, int64_t, float*, Scratch&) {
  return false;
}
#endif  // AVX2

}  // namespace rpa::fast::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // RPA_FAST_AVX2_GROUP_INL_H_
