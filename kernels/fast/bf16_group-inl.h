// The fast kernel's decode item for bfloat16 and 8-bit float KV (AVX-512 targets with AVX512-BF16 and AVX512-VBMI): few rows per KV head, K and V widened in one operation a vector.
// Included once per target by simd_attention.cc through foreach_target.h; empty on other targets.
//
// TileGroup's work (every row of a few KV heads of one sequence, key chunk
// [k0, k1]) with fewer instructions per key, for the case that decode
// batches spend their time in: bfloat16 K and V without scales.
//  * q.k stays float32 FMAs on q's values (exact products, as the einsum
//    at kernel.py:131 promotes K to float32), but K is widened from 64-byte
//    loads in two operations: the even elements are the words shifted left
//    by 16, the odd ones the words with the low half cleared. q is stored
//    in that even/odd order once per item. Where q's values are bfloat16,
//    q.k is VDPBF16PS of q's pairs with K's words as they lie (products of
//    bfloat16 values are exact in float32): half the instructions.
//  * p.v, where VDPBF16PS is fast (KernelCtx::bf16_dot, AMD): the
//    probabilities are rounded to bfloat16 - the reference's own
//    softmax(...).astype(v.dtype) (kernel.py:142) - and p.v is VDPBF16PS
//    over key pairs: V rows of two keys interleaved by VPUNPCK{L,H}WD,
//    which permutes head_dim within 128-bit blocks; the accumulator is put
//    back in order when the rows are written.
//  * p.v elsewhere (Intel, where VDPBF16PS issues at half the FMA rate):
//    float32 probabilities, V widened even/odd as K is, FMAs; q.k then
//    takes FMAs for bfloat16 q too. No VDPBF16PS runs on this path.
//  * the online softmax state lives in vectors of the score layout (lane
//    i: row i % 4 of a group of 4, key i / 4 of the register block).
//  * float8_e4m3fn and float8_e5m2 KV take the same item: every value of
//    theirs is a bfloat16 value, so 64 bytes become two vectors of
//    bfloat16 words by two byte lookups (VPERMT2B: the word's high and low
//    byte of the magnitude), the sign bit xor'ed in and the bytes
//    interleaved (VPUNPCK{L,H}BW) - exact, NaN and Inf included. With
//    k_scale / v_scale and bfloat16 q the tables hold the dequantised
//    values (fp8_bf16_table), bfloat16 values as well.
//    The interleave leaves the words in an order of its own (Fp8Dim); q
//    is stored in that order and the accumulator put back at the end. Half
//    the bytes of bfloat16 KV for five operations per 64 values.
// Subnormal bfloat16 inputs of VDPBF16PS count as zero (weights below
// 2^-126 of the row's largest, V elements below 2^-126): far below the
// tolerance bound.
#if defined(RPA_FAST_BF16_GROUP_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef RPA_FAST_BF16_GROUP_INL_H_
#undef RPA_FAST_BF16_GROUP_INL_H_
#else
#define RPA_FAST_BF16_GROUP_INL_H_
#endif

#include <immintrin.h>

#include "hwy/highway.h"
#include "kernels/fast/cpu_traits.h"
#include "kernels/fast/fp8_bf16_table.h"
#include "kernels/fast/item_ahead.h"
#include "kernels/fast/tiles-inl.h"

HWY_BEFORE_NAMESPACE();
namespace rpa::fast::HWY_NAMESPACE {

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL

#define RPA_FAST_BF16G_ATTR __attribute__((target(HWY_TARGET_STR ",avx512bf16,avx512vbmi")))

// Keys per block of the item: one softmax step, one rescale of the
// accumulators and one set of row pointers per block and head; the L2
// stream runs one block ahead. On the FMA path (the Xeon) 64 keys measured
// faster than 32 and 16 warm, and no slower cold (figures in
// docs/fast_kernel.md). The most keys a block holds (the scratch layout).
inline constexpr int64_t kBf16BlockKeys = 64;
// On the VDPBF16PS path (AMD Zen 5) blocks of 16 keys: slower warm (L2-
// resident pages: 0.55 against 0.51 ms, q float32) but faster cold, which
// is what a decode step is: the next block, streamed into L2 in address
// order during this one, is then 64 KiB rather than 256 KiB, and an item's
// first block, asked for at once with nothing to overlap it, a quarter of
// the size. The bench's decode, 2 threads, cold, medians of 40 alternated
// calls (q float32 / bfloat16): 0.78-0.85 against 0.90-1.04 ms on packed
// slots; on padded slots (native_kv.h) 16 keys 0.64-0.74, 32 keys
// 0.64-0.76, 64 keys 0.67-0.79, 8 keys 0.70-0.81.
inline constexpr int64_t kBf16DotBlockKeys = 16;
// 8-bit KV on that path: blocks of 32 keys, the bytes of 16 bfloat16 keys
// (64 KiB of the bench's decode). The bench's decode with float8_e4m3fn
// KV, cold, 2 threads, 16 / 32 / 64 keys alternated call by call (medians
// of 60-100, q float32 and bfloat16): 32 keys 0.95-0.98x the time of 16
// in all six runs, 64 keys 0.96-1.02x.
inline constexpr int64_t kFp8DotBlockKeys = 32;
static_assert(kBf16DotBlockKeys <= kBf16BlockKeys && kBf16DotBlockKeys % 8 == 0, "a block's pairs fill whole vectors");
static_assert(kFp8DotBlockKeys <= kBf16BlockKeys && kFp8DotBlockKeys % 8 == 0, "a block's pairs fill whole vectors");
// sa [heads][groups of 4][keys][4] and pw [key pairs][4] live in the
// scratch's st and lsum buffers.
static_assert(kBf16BlockKeys <= kBlockKeys && kBf16BlockKeys % 8 == 0, "st holds kBlockKeys keys per row");
static_assert(kBf16BlockKeys / 2 * 4 <= kMaxRowsA * kGroupHeads, "lsum holds the block's bfloat16 pairs");

// The first block of an item has no block before it to stream it into L2
// (unless the thread's item before it, looking ahead, streamed it in).
// Where VDPBF16PS is fast (as measured on AMD) all of it is asked for at
// once; on the FMA path only its first tokens are: asking for all 64 rows
// at once stalled the core for the whole DRAM time (bench cold decode,
// Xeon, interleaved A/B, medians of 30: 0.96-0.985x the time with 8
// tokens, the same with none).
inline constexpr int64_t kFirstBurstTokens = 8;

inline bool Bf16GroupApplies(const KernelCtx& c) {
  const bool scaled = c.has_k_scale || c.has_v_scale;
  const bool kv_ok = has_fp8_bf16_table(c.kv_dtype) ? !scaled || fp8_scale_in_table(c.q_dtype)
                                                     : c.kv_dtype == DType::kBFloat16 && !scaled;
  return c.bf16_item && kv_ok && c.head_dim > 0 && c.head_dim % 64 == 0 && hn::Lanes(DF()) == 16;
}

// Bytes of a token's K and V rows of `heads` KV heads (contiguous in its slot).
inline int64_t Bf16TokenBytes(const KernelCtx& c, int64_t heads) { return 2 * heads * c.head_dim * c.kv_elem_bytes; }

// The byte lookup tables of an 8-bit float KV dtype in registers
// (Fp8Bf16Table), and the sign bit of each byte.
struct Fp8Lut {
  __m512i hi0, hi1, lo0, lo1, sign;
};
RPA_FAST_BF16G_ATTR HWY_INLINE Fp8Lut LoadFp8Lut(const Fp8Bf16Table& t) {
  return {_mm512_load_si512(t.hi), _mm512_load_si512(t.hi + 64), _mm512_load_si512(t.lo),
          _mm512_load_si512(t.lo + 64), _mm512_set1_epi8(char(0x80))};
}

// The 64 values at p as bfloat16 words: w0 word 8j + i is element 16j + i,
// w1 word 8j + i element 16j + 8 + i (j = 0..3, i = 0..7), the order
// VPUNPCK{L,H}BW leave within each 128-bit block (Fp8Dim).
RPA_FAST_BF16G_ATTR HWY_INLINE void Fp8Words(const Fp8Lut& t, const uint8_t* p, __m512i& w0, __m512i& w1) {
  const __m512i b = _mm512_loadu_si512(p);
  // VPERMT2B reads the low 7 bits of each index byte: the magnitude.
  const __m512i hi = _mm512_ternarylogic_epi32(_mm512_permutex2var_epi8(t.hi0, b, t.hi1), b, t.sign, 0x78);  // ^ sign
  const __m512i lo = _mm512_permutex2var_epi8(t.lo0, b, t.lo1);
  w0 = _mm512_unpacklo_epi8(lo, hi);
  w1 = _mm512_unpackhi_epi8(lo, hi);
}

// The element (of its 64-element chunk) that word p of Fp8Words' w0, w1 (p = 32 * vector + word) holds.
inline constexpr int64_t Fp8Dim(int64_t p) { return 16 * ((p % 32) / 8) + 8 * (p / 32) + p % 8; }

// Whether the item runs a group item of `s` (QKStepBf16 takes 4 or 8 rows).
inline bool Bf16GroupTakes(const KernelCtx& c, const SeqPlan& s) {
  return Bf16GroupApplies(c) && s.num_tokens * c.group <= 8;
}

// Lane i of the result = the sum of the 16 lanes of a[i].
RPA_FAST_BF16G_ATTR HWY_INLINE __m512 SumEach16(const __m512* a) {
  __m512 b[8], c[4], d[2];
  for (int i = 0; i < 8; ++i)  // per 128-bit block: (x0 + x2, y0 + y2, x1 + x3, y1 + y3)
    b[i] = _mm512_add_ps(_mm512_unpacklo_ps(a[2 * i], a[2 * i + 1]), _mm512_unpackhi_ps(a[2 * i], a[2 * i + 1]));
  for (int i = 0; i < 4; ++i) {  // per block: a partial sum of a[4i + k] in lane k
    const __m512d x = _mm512_castps_pd(b[2 * i]), y = _mm512_castps_pd(b[2 * i + 1]);
    c[i] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(x, y)), _mm512_castpd_ps(_mm512_unpackhi_pd(x, y)));
  }
  for (int i = 0; i < 2; ++i)  // blocks (0 + 1, 2 + 3) of c[2i], then of c[2i + 1]
    d[i] = _mm512_add_ps(_mm512_shuffle_f32x4(c[2 * i], c[2 * i + 1], 0x88),
                         _mm512_shuffle_f32x4(c[2 * i], c[2 * i + 1], 0xDD));
  return _mm512_add_ps(_mm512_shuffle_f32x4(d[0], d[1], 0x88), _mm512_shuffle_f32x4(d[0], d[1], 0xDD));
}

// Raw scores (q.k, before sm_scale) of kT tokens x kR rows (16 in all) of
// one head. kQPairs = false: float32 FMAs over head_dim on q's float32
// values, K widened from 64-byte loads - even elements are the words
// shifted left by 16, odd ones the words with the low half cleared (qeo
// holds each q row in that even/odd order). kQPairs = true (q's values are
// bfloat16): VDPBF16PS of q's bfloat16 pairs (qeo's words) with K's words
// as they lie - exact products, as the float32 einsum (kernel.py:131), half
// the instructions. krows[t]: token t's K row. The score of (t, row r) goes
// to sa + ((r / 4) * kBf16BlockKeys + t) * 4 + r % 4: per group of 4 rows,
// [key][4], the softmax's layout. One line of `pf` per (line, token)
// step: p.v streams the other half of the head step's share. kE: bytes a
// K element (2: bfloat16; 1: 8-bit float, looked up by `lut`, q's dims
// in Fp8Dim order per 64).
template <int kT, int kR, bool kQPairs, int kE>
RPA_FAST_BF16G_ATTR HWY_INLINE void QKStepBf16(const float* HWY_RESTRICT qeo, int64_t D, const uint8_t* const* krows,
                                                float* HWY_RESTRICT sa, L2LineStream& pf, const Fp8Lut& lut) {
  static_assert(kT * kR == 16 && kR % 4 == 0, "sixteen accumulators");
  __m512 acc[16];
  for (int i = 0; i < 16; ++i) acc[i] = _mm512_setzero_ps();
  // With 4 rows, q's vectors of a chunk stay in registers beside the 16
  // accumulators; with 8, they are memory operands.
  constexpr int kQRegs = kR <= 4 ? kR : 1;
  // 8-bit K: a line is 64 elements, looked up into two vectors of words;
  // q's vectors are memory operands (the tables hold four registers).
  for (int64_t c0 = 0; kE == 1 && c0 < D; c0 += 64) {
    for (int t = 0; t < kT; ++t) {
      pf.Next();
      __builtin_prefetch(krows[t] + c0 + D, 0, 3);  // the V line p.v reads
      __m512i w[2];
      Fp8Words(lut, krows[t] + c0, w[0], w[1]);
      __m512* at = acc + t * kR;
      for (int h = 0; h < 2; ++h) {
        if constexpr (kQPairs) {
          const uint32_t* qw = reinterpret_cast<const uint32_t*>(qeo) + (c0 + 32 * h) / 2;
          for (int r = 0; r < kR; ++r)
            at[r] = _mm512_dpbf16_ps(at[r], (__m512bh)_mm512_loadu_si512(qw + r * D), (__m512bh)w[h]);
        } else {
          const float* qc = qeo + c0 + 32 * h;
          const __m512 ke = _mm512_castsi512_ps(_mm512_slli_epi32(w[h], 16));
          for (int r = 0; r < kR; ++r) at[r] = _mm512_fmadd_ps(_mm512_load_ps(qc + r * D), ke, at[r]);
          const __m512 ko = _mm512_castsi512_ps(_mm512_and_si512(w[h], _mm512_set1_epi32(int(0xFFFF0000u))));
          for (int r = 0; r < kR; ++r) at[r] = _mm512_fmadd_ps(_mm512_load_ps(qc + r * D + 16), ko, at[r]);
        }
      }
    }
  }
  for (int64_t c0 = 0; kE == 2 && c0 < D; c0 += 32) {
    __m512 qe[kQRegs], qo[kQRegs];
    if constexpr (kQPairs) {
      const uint32_t* qw = reinterpret_cast<const uint32_t*>(qeo) + c0 / 2;
      if constexpr (kR <= 4)
        for (int r = 0; r < kR; ++r) qe[r] = _mm512_castsi512_ps(_mm512_loadu_si512(qw + r * D));
      for (int t = 0; t < kT; ++t) {
        pf.Next();
        __builtin_prefetch(krows[t] + 2 * c0 + 2 * D, 0, 3);  // the V line p.v reads
        const __m512bh k = (__m512bh)_mm512_loadu_si512(krows[t] + 2 * c0);
        __m512* at = acc + t * kR;
        for (int r = 0; r < kR; ++r) {
          const __m512 q = kR <= 4 ? qe[r % kQRegs] : _mm512_castsi512_ps(_mm512_loadu_si512(qw + r * D));
          at[r] = _mm512_dpbf16_ps(at[r], (__m512bh)q, k);
        }
      }
      continue;
    }
    const float* qc = qeo + c0;
    if constexpr (kR <= 4)
      for (int r = 0; r < kR; ++r) qe[r] = _mm512_load_ps(qc + r * D), qo[r] = _mm512_load_ps(qc + r * D + 16);
    for (int t = 0; t < kT; ++t) {
      pf.Next();
      const uint8_t* kp = krows[t] + 2 * c0;
      __builtin_prefetch(kp + 2 * D, 0, 3);  // the V line p.v reads
      __m512* at = acc + t * kR;
      // Even elements, then odd ones: one widened vector live at a time.
      const __m512 ke = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_loadu_si512(kp), 16));
      for (int r = 0; r < kR; ++r)
        at[r] = _mm512_fmadd_ps(kR <= 4 ? qe[r % kQRegs] : _mm512_load_ps(qc + r * D), ke, at[r]);
      const __m512 ko = _mm512_castsi512_ps(_mm512_maskz_loadu_epi16(0xAAAAAAAAu, kp));  // odd halves kept
      for (int r = 0; r < kR; ++r)
        at[r] = _mm512_fmadd_ps(kR <= 4 ? qo[r % kQRegs] : _mm512_load_ps(qc + r * D + 16), ko, at[r]);
    }
  }
  const __m512 s = SumEach16(acc);
  for (int b = 0; b < 4; ++b) {  // lanes 4b .. 4b + 3: one (token, group of 4 rows)
    const int t = 4 * b / kR, gi = (4 * b % kR) / 4;
    float* dst = sa + (gi * kBf16BlockKeys + t) * 4;
    switch (b) {
      case 0: _mm_store_ps(dst, _mm512_extractf32x4_ps(s, 0)); break;
      case 1: _mm_store_ps(dst, _mm512_extractf32x4_ps(s, 1)); break;
      case 2: _mm_store_ps(dst, _mm512_extractf32x4_ps(s, 2)); break;
      default: _mm_store_ps(dst, _mm512_extractf32x4_ps(s, 3)); break;
    }
  }
}

// p (16 keys x 4 rows, lane key * 4 + row, in four vectors) -> bfloat16
// pairs: word kp * 4 + r = (p[2kp][r], p[2kp + 1][r]), round to nearest even.
RPA_FAST_BF16G_ATTR HWY_INLINE void PairProbabilities(const float* HWY_RESTRICT p, int64_t keys,
                                                       uint32_t* HWY_RESTRICT out) {
  // Element e of an 8-key bfloat16 vector is key e / 4, row e % 4; word
  // w = kp * 4 + r takes elements 8kp + r (low half) and 8kp + 4 + r.
  alignas(64) static const uint16_t kIdx[32] = {0,  4,  1,  5,  2,  6,  3,  7,  8,  12, 9,  13, 10, 14, 11, 15,
                                                16, 20, 17, 21, 18, 22, 19, 23, 24, 28, 25, 29, 26, 30, 27, 31};
  const __m512i idx = _mm512_load_si512(kIdx);
  for (int64_t k0 = 0; k0 < keys; k0 += 8) {
    const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_load_ps(p + (k0 + 4) * 4), _mm512_load_ps(p + k0 * 4));
    _mm512_store_si512(out + k0 / 2 * 4, _mm512_permutexvar_epi16(idx, (__m512i)b));
  }
}

// o[4 rows][64 permuted dims at c0] = o * alpha + sum over key pairs of
// (p pair) . (V pair), V pairs from VPUNPCK{L,H}WD of two rows' 32-element
// chunks c0 and c0 + 32. Per pair: the next head step's K lines into L1,
// 2 * kE lines of the next block's L2 stream (the half of the head step's
// share that QKStepBf16 leaves). kE as QKStepBf16 takes it (8-bit V: the
// dims in Fp8Dim order per 64, on top of the interleave's).
template <int kE>
RPA_FAST_BF16G_ATTR HWY_INLINE void PVBf16Kv(float* HWY_RESTRICT o, int64_t D, const float* alpha,
                                              const uint32_t* HWY_RESTRICT pw, int64_t pairs,
                                              const uint8_t* const* vrow, int64_t c0,
                                              const uint8_t* const* knext, L2LineStream& pf, const Fp8Lut& lut) {
  __m512 acc[4][4];
  for (int r = 0; r < 4; ++r) {
    const __m512 a = _mm512_set1_ps(alpha[r]);
    for (int v = 0; v < 4; ++v) acc[r][v] = _mm512_mul_ps(_mm512_load_ps(o + r * D + c0 + v * 16), a);
  }
  for (int64_t kp = 0; kp < pairs; ++kp) {
    for (int i = 0; i < 2; ++i)  // the next head step's K lines of these keys at this chunk
      for (int l = 0; l < kE; ++l) __builtin_prefetch(knext[2 * kp + i] + kE * c0 + 64 * l, 0, 3);
    for (int i = 0; i < 2 * kE; ++i) pf.Next();
    __m512i a[2], b[2];  // 64 dims of the two keys' rows
    if constexpr (kE == 1) {
      Fp8Words(lut, vrow[2 * kp] + c0, a[0], a[1]);
      Fp8Words(lut, vrow[2 * kp + 1] + c0, b[0], b[1]);
    } else {
      for (int h = 0; h < 2; ++h) {
        a[h] = _mm512_loadu_si512(vrow[2 * kp] + 2 * (c0 + 32 * h));
        b[h] = _mm512_loadu_si512(vrow[2 * kp + 1] + 2 * (c0 + 32 * h));
      }
    }
    __m512bh vv[4];
    for (int h = 0; h < 2; ++h) {
      vv[2 * h] = (__m512bh)_mm512_unpacklo_epi16(a[h], b[h]);
      vv[2 * h + 1] = (__m512bh)_mm512_unpackhi_epi16(a[h], b[h]);
    }
    for (int r = 0; r < 4; ++r) {
      const __m512bh pp = (__m512bh)_mm512_set1_epi32(int(pw[kp * 4 + r]));
      for (int v = 0; v < 4; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], pp, vv[v]);
    }
  }
  for (int r = 0; r < 4; ++r)
    for (int v = 0; v < 4; ++v) _mm512_store_ps(o + r * D + c0 + v * 16, acc[r][v]);
}

// The item's p.v without VDPBF16PS (where it issues at half the FMA rate):
// o[4 rows][64 dims at c0] = o * alpha + sum over keys of p[key][r] * V[key],
// with p the float32 probabilities as GroupBlockSoftmax leaves them ([key][4])
// and V widened from 64-byte loads as QKStepBf16 widens K, so o's dims are
// in that even/odd order per 32-element chunk (UnpermuteEvenOdd). Per key:
// the next head step's K lines into L1, two lines of the next block's L2
// stream (the other half of what QKStepBf16 issues, so DRAM is asked
// through p.v too); one of each for 8-bit V (kE as QKStepBf16 takes it).
template <int kE>
RPA_FAST_BF16G_ATTR HWY_INLINE void PVBf16Fma(float* HWY_RESTRICT o, int64_t D, const float* alpha,
                                               const float* HWY_RESTRICT p, int64_t nb, const uint8_t* const* vrow,
                                               int64_t c0, const uint8_t* const* knext, L2LineStream& pf,
                                               const Fp8Lut& lut) {
  __m512 acc[4][4];
  for (int r = 0; r < 4; ++r) {
    const __m512 a = _mm512_set1_ps(alpha[r]);
    for (int v = 0; v < 4; ++v) acc[r][v] = _mm512_mul_ps(_mm512_load_ps(o + r * D + c0 + v * 16), a);
  }
  const __m512i hi = _mm512_set1_epi32(int(0xFFFF0000u));
  for (int64_t j = 0; j < nb; ++j) {
    for (int l = 0; l < kE; ++l) __builtin_prefetch(knext[j] + kE * c0 + 64 * l, 0, 3), pf.Next();
    __m512i a, b;
    if constexpr (kE == 1) {
      Fp8Words(lut, vrow[j] + c0, a, b);
    } else {
      a = _mm512_loadu_si512(vrow[j] + 2 * c0);
      b = _mm512_loadu_si512(vrow[j] + 2 * c0 + 64);
    }
    __m512 vv[4];
    vv[0] = _mm512_castsi512_ps(_mm512_slli_epi32(a, 16));
    vv[1] = _mm512_castsi512_ps(_mm512_and_si512(a, hi));
    vv[2] = _mm512_castsi512_ps(_mm512_slli_epi32(b, 16));
    vv[3] = _mm512_castsi512_ps(_mm512_and_si512(b, hi));
    for (int r = 0; r < 4; ++r) {
      const __m512 pr = _mm512_set1_ps(p[j * 4 + r]);
      for (int v = 0; v < 4; ++v) acc[r][v] = _mm512_fmadd_ps(pr, vv[v], acc[r][v]);
    }
  }
  for (int r = 0; r < 4; ++r)
    for (int v = 0; v < 4; ++v) _mm512_store_ps(o + r * D + c0 + v * 16, acc[r][v]);
}

// The row of PVBf16Fma's accumulator in head_dim order.
inline void UnpermuteEvenOdd(const float* HWY_RESTRICT o, int64_t D, float* HWY_RESTRICT out) {
  for (int64_t c0 = 0; c0 < D; c0 += 32)
    for (int64_t i = 0; i < 16; ++i) out[c0 + 2 * i] = o[c0 + i], out[c0 + 2 * i + 1] = o[c0 + 16 + i];
}

// The accumulator row in head_dim order: in each 32-element chunk, vector
// 0 holds dims 8b + i and vector 1 dims 8b + 4 + i at lane 4b + i.
inline void UnpermuteRow(const float* HWY_RESTRICT o, int64_t D, float* HWY_RESTRICT out) {
  for (int64_t c0 = 0; c0 < D; c0 += 32)
    for (int64_t b = 0; b < 4; ++b)
      for (int64_t i = 0; i < 4; ++i) {
        out[c0 + 8 * b + i] = o[c0 + 4 * b + i];
        out[c0 + 8 * b + 4 + i] = o[c0 + 16 + 4 * b + i];
      }
}

// The first block (at most `BK` keys) of the thread's next item, claimed
// now, where that item is one of these: its token rows (K of its first KV
// head) into `rows` and the bytes of a token's K and V rows of its heads
// into `bytes`. Returns the block's keys, 0 where there is no such item.
inline int64_t NextItemFirstBlock(const KernelCtx& c, ItemAhead& ahead, int64_t BK, const uint8_t** rows,
                                  int64_t& bytes) {
  const WorkItem* w = ahead.Claim();
  if (w == nullptr || !w->group) return 0;
  const SeqPlan& s = ahead.plan->seqs[size_t(w->seq)];
  const RowRange r = GroupKeyRange(c, s, w->key0, w->key1);
  if (!Bf16GroupTakes(c, s) || r.lo > r.hi) return 0;
  const int64_t n = std::min<int64_t>(BK, r.hi + 1 - r.lo);
  TokenRows(c, s, w->kv_head, r.lo, n, rows);
  bytes = Bf16TokenBytes(c, w->heads);
  ahead.streamed = true;
  return n;
}

// The item; see TileGroup for the arguments. At most kMaxRowsA rows per
// head. `first_streamed`: the thread's item before this one streamed this
// one's first block into L2. `ahead`: the thread's claim on its next item, whose first block the last block streams in (VDPBF16PS
// path only: the FMA path was measured on the Xeon, where streaming the
// next unclaimed item's first block was slower; this claimed one is not
// measured there). kE: bytes a KV element (2: bfloat16; 1: 8-bit float).
template <int kE>
RPA_FAST_BF16G_ATTR void GroupBf16(const KernelCtx& c, const SeqPlan& s, int64_t h0, int64_t nh, int64_t k0,
                                   int64_t k1, float* partial, Scratch& sc, bool first_streamed,
                                   ItemAhead& ahead) {
  const int64_t D = c.head_dim;
  const Fp8Lut klut = kE == 1 ? LoadFp8Lut(c.k_fp8) : Fp8Lut{};
  const Fp8Lut vlut = kE == 1 ? LoadFp8Lut(c.v_fp8) : Fp8Lut{};
  // head_dim <= 1024 fits the stack buffer; larger rows use the K scratch.
  HWY_ALIGN float row[1024];
  float* ordered = D <= 1024 ? row : sc.kbuf.get();
  const GroupState g = StartGroup(c, s, nh, k0, k1, sc);
  const bool ill_conditioned = GroupScoresIllConditioned(c, s, h0, nh, g.R);
  const int64_t R = g.R, NG = g.NG;
  const TileKeys& keys = g.keys;
  const size_t rows_stride = size_t(NG) * 4 * size_t(D);  // one head's rows in qa / o

  // q rows as QKStepBf16 reads them: bfloat16 pairs (one word per two
  // dims) when q's values are bfloat16, else float32 in even/odd order per
  // 32-element chunk; for 8-bit KV, of q's dims in Fp8Dim order. o zeroed.
  const bool dot = c.bf16_dot;
  const bool q_pairs = dot && c.q_dtype == DType::kBFloat16;
  float* qa = sc.qt.get();  // [nh][NG * 4][D]
  float* o = sc.o.get();    // [nh][NG * 4][D], permuted dims
  std::fill(qa, qa + size_t(nh) * rows_stride, 0.0f);
  std::fill(o, o + size_t(nh) * rows_stride, 0.0f);
  for (int64_t h = 0; h < nh; ++h)
    for (int64_t r = 0; r < R; ++r) {
      const float* q = QRow(c, s, h0 + h, r);
      if constexpr (kE == 1) {
        for (int64_t i = 0; i < D; ++i) ordered[i] = q[i / 64 * 64 + Fp8Dim(i % 64)];
        q = ordered;
      }
      float* dst = qa + h * rows_stride + r * D;
      if (q_pairs) {
        uint32_t* w = reinterpret_cast<uint32_t*>(dst);
        for (int64_t i = 0; i < D / 2; ++i) {
          uint32_t a, b;
          std::memcpy(&a, q + 2 * i, 4);
          std::memcpy(&b, q + 2 * i + 1, 4);
          w[i] = (a >> 16) | (b & 0xFFFF0000u);  // exact: the values are bfloat16
        }
        continue;
      }
      for (int64_t c0 = 0; c0 < D; c0 += 32)
        for (int64_t i = 0; i < 16; ++i) dst[c0 + i] = q[c0 + 2 * i], dst[c0 + 16 + i] = q[c0 + 2 * i + 1];
    }
  float* alpha = sc.alpha.get();
  float* sa = sc.st.get();                                   // [keys][4] probabilities of a group
  uint32_t* pw = reinterpret_cast<uint32_t*>(sc.lsum.get());  // [key pairs][4] bfloat16 pairs

  const int64_t row_bytes = D * kE;
  const uint8_t* zero = reinterpret_cast<const uint8_t*>(sc.zero.get());
  // Prefetch, three streams, each spread over a loop:
  //  * the next block (every head's K and V rows of a token are contiguous
  //    in its page row) into L2 in address order, a share per head step,
  //    half of it in that head's q.k (a line per (chunk, token) step) and
  //    half in its p.v (four lines per key pair and 64 dims), so the lines
  //    are asked for at an even pace through the head step
  //    (L2LineStream). All of the share in q.k, about 40% of the step,
  //    took 1.03x the time cold with q bfloat16 (0.98-1.05x with q
  //    float32) and 1.02-1.12x warm on the AMD guest (bench decode, two
  //    builds' processes alternated, medians of 40 and 300 calls);
  //  * each V line into L1 as q.k reads the K line at the same offset;
  //  * the next head step's K rows into L1, during this one's p.v.
  // Against the same two levels issued a head step's lines at a time (the
  // next block into L2, the next head step's K and V rows into L1), on the
  // bench's cold decode (fast_bench, medians of 6 interleaved runs): 0.77
  // vs 0.91 ms with q float32, 0.70 vs 0.97 ms with q bfloat16. Two blocks
  // ahead, or the L1 streams dropped, measured slower.
  const int64_t token_bytes = Bf16TokenBytes(c, nh);  // a multiple of 256 bytes (head_dim % 64 == 0)
  const int64_t BK = dot ? (kE == 1 ? kFp8DotBlockKeys : kBf16DotBlockKeys) : kBf16BlockKeys;  // keys per block
  const uint8_t* tok_bufs[2][kBf16BlockKeys];
  const uint8_t** tok = tok_bufs[0];       // the block's tokens
  const uint8_t** tok_next = tok_bufs[1];  // the next block's
  TokenRows(c, s, h0, keys.range.lo, std::min<int64_t>(BK, keys.range.hi + 1 - keys.range.lo), tok);
  const uint8_t* vr[kBf16BlockKeys + 2];
  if (!first_streamed) {  // The first block has no block before it to stream it in (kFirstBurstTokens).
    L2LineStream first{.rows = tok,
                       .j = 0,
                       .j_end = std::min<int64_t>(dot ? BK : kFirstBurstTokens,
                                                  keys.range.hi + 1 - keys.range.lo),
                       .bytes = token_bytes};
    first.Start();
    first.Rest();
  }

  // Block by block (a block of every head is a few contiguous page rows,
  // read while DRAM has them open), head by head within a block. (Head
  // h + 1's q.k placed between head h's softmax and p.v, for the core to
  // overlap them, measured no faster.)
  for (int64_t b0 = keys.range.lo; b0 <= keys.range.hi; b0 += BK) {
    const int64_t nb = std::min<int64_t>(BK, keys.range.hi + 1 - b0);
    const int64_t nb4 = (nb + 3) / 4 * 4, nb8 = (nb + 7) / 8 * 8;
    int64_t nb_next = std::min<int64_t>(BK, keys.range.hi + 1 - (b0 + BK));
    int64_t next_bytes = token_bytes;  // of a token of the block streamed in
    if (nb_next > 0) {
      TokenRows(c, s, h0, b0 + BK, nb_next, tok_next);
    } else if (dot) {  // the look-ahead runs on the VDPBF16PS path only (GroupBf16's comment)
      nb_next = NextItemFirstBlock(c, ahead, BK, tok_next, next_bytes);
    }
    const bool need_mask = b0 < keys.lo_max || b0 + nb - 1 > keys.hi_min;
    for (int64_t h = 0; h < nh; ++h) {
      const int64_t hoff = 2 * h * row_bytes;
      // This head step's share of the next block is nb_next / nh tokens of
      // 4 * nh * D bytes, i.e. nb * D / 16 lines for a full block: one per
      // (chunk, token) step of q.k below, of which there are nb * D / 32,
      // and as many in p.v; any rest after it.
      const int64_t per = (nb_next + nh - 1) / nh;
      L2LineStream pf{.rows = tok_next, .j = h * per, .j_end = std::min(nb_next, (h + 1) * per), .bytes = next_bytes};
      pf.Start();
      const float* qh = qa + h * rows_stride;
      for (int64_t t0 = 0; t0 < nb4; t0 += NG == 1 ? 4 : 2) {
        const uint8_t* kt[4];
        for (int64_t t = 0; t < (NG == 1 ? 4 : 2); ++t) kt[t] = t0 + t < nb ? tok[t0 + t] + hoff : zero;
        float* sdst = sa + (h * NG * kBf16BlockKeys + t0) * 4;
        if (NG == 1) {
          if (q_pairs) QKStepBf16<4, 4, true, kE>(qh, D, kt, sdst, pf, klut);
          else QKStepBf16<4, 4, false, kE>(qh, D, kt, sdst, pf, klut);
        } else {
          if (q_pairs) QKStepBf16<2, 8, true, kE>(qh, D, kt, sdst, pf, klut);
          else QKStepBf16<2, 8, false, kE>(qh, D, kt, sdst, pf, klut);
        }
      }
      // The next head step's K rows (the next block's first head after the
      // last), during this one's p.v; rows past the block read the zero row.
      const uint8_t* knext[kBf16BlockKeys];
      for (int64_t j = 0; j < nb8; ++j)
        knext[j] = h + 1 < nh ? (j < nb ? tok[j] + hoff + 2 * row_bytes : zero) : (j < nb_next ? tok_next[j] : zero);
      const uint8_t* kh[kBf16BlockKeys];
      for (int64_t j = 0; j < nb; ++j) kh[j] = tok[j] + hoff;
      for (int64_t j = 0; j < nb8; ++j) vr[j] = j < nb ? tok[j] + hoff + row_bytes : zero;
      for (int64_t gi = 0; gi < NG; ++gi) {
        float* sg = sa + (h * NG + gi) * kBf16BlockKeys * 4;  // [key][4]
        ExactGroupScoresIfLarge(c, s, h0 + h, gi, R, nb, nb4, kh, /*native=*/true, sg, sc, ill_conditioned);
        GroupBlockSoftmax(c, g, h, gi, sg, nb4, nb8, b0, nb, need_mask, alpha);
        float* oh = o + h * rows_stride + gi * 4 * D;
        if (dot) {
          PairProbabilities(sg, nb8, pw);
          for (int64_t c0 = 0; c0 < D; c0 += 64) PVBf16Kv<kE>(oh, D, alpha, pw, nb8 / 2, vr, c0, knext, pf, vlut);
        } else {
          for (int64_t c0 = 0; c0 < D; c0 += 64) PVBf16Fma<kE>(oh, D, alpha, sg, nb, vr, c0, knext, pf, vlut);
        }
      }
      pf.Rest();
    }
    std::swap(tok, tok_next);
  }
  FinishGroup(c, s, g, h0, nh, partial, [&](int64_t h, int64_t r) {
    const float* acc = o + h * rows_stride + r * D;
    if (dot) {
      UnpermuteRow(acc, D, ordered);
    } else {
      UnpermuteEvenOdd(acc, D, ordered);
    }
    if constexpr (kE == 1) {  // from Fp8Dim order, 64 dims at a time
      float chunk[64];
      for (int64_t c0 = 0; c0 < D; c0 += 64) {
        std::memcpy(chunk, ordered + c0, sizeof chunk);
        for (int64_t i = 0; i < 64; ++i) ordered[c0 + Fp8Dim(i)] = chunk[i];
      }
    }
    return static_cast<const float*>(ordered);
  });
}

inline bool RunBf16Group(const KernelCtx& c, const SeqPlan& s, int64_t h0, int64_t nh, int64_t k0, int64_t k1,
                         float* partial, Scratch& sc, bool first_streamed, ItemAhead& ahead) {
  if (!Bf16GroupTakes(c, s)) return false;
  if (c.kv_elem_bytes == 1) {
    GroupBf16<1>(c, s, h0, nh, k0, k1, partial, sc, first_streamed, ahead);
  } else {
    GroupBf16<2>(c, s, h0, nh, k0, k1, partial, sc, first_streamed, ahead);
  }
  return true;
}

// Test hook: 64 values of 8-bit float KV as the item reads them (Fp8Words;
// words[p] holds element Fp8Dim(p)), with `scale` folded in where `scaled`.
// False where the CPU lacks the item's instructions.
RPA_FAST_BF16G_ATTR inline bool Fp8WordsOfTarget(DType kv, bool scaled, float scale, const uint8_t* src,
                                                 uint16_t* words) {
  if (!has_bf16_dot() || !has_byte_permute() || !has_fp8_bf16_table(kv)) return false;
  __m512i w[2];
  Fp8Words(LoadFp8Lut(fp8_bf16_table(kv, scaled, scale)), src, w[0], w[1]);
  std::memcpy(words, w, sizeof w);
  return true;
}

#undef RPA_FAST_BF16G_ATTR
#else
inline bool RunBf16Group(const KernelCtx&, const SeqPlan&, int64_t, int64_t, int64_t, int64_t, float*, Scratch&, bool,
                         ItemAhead&) {
  return false;
}
inline bool Fp8WordsOfTarget(DType, bool, float, const uint8_t*, uint16_t*) { return false; }
#endif  // AVX3

}  // namespace rpa::fast::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // RPA_FAST_BF16_GROUP_INL_H_
