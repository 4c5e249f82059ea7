// SIMD conversions for the fast kernel (per Highway target): native KV bytes -> float32, dequantisation, rounding to q's dtype.
// Included once per target by simd_attention.cc through foreach_target.h.
#if defined(RPA_FAST_CONVERT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef RPA_FAST_CONVERT_INL_H_
#undef RPA_FAST_CONVERT_INL_H_
#else
#define RPA_FAST_CONVERT_INL_H_
#endif

#include <cstring>

#include "hwy/highway.h"
#include "hwy/contrib/math/math-inl.h"
#include "oracle/dtype.h"

HWY_BEFORE_NAMESPACE();
namespace rpa::fast::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// N elements of the KV dtype at `src` widened exactly to float32. The bit
// manipulations are checked against the dtype model (decode) for every
// 8- and 16-bit pattern in tests/kernels/fast_test.cc.
template <DType kKv>
HWY_INLINE VF LoadKv(DF df, const uint8_t* HWY_RESTRICT src) {
  const hn::RebindToUnsigned<DF> du;
  if constexpr (kKv == DType::kFloat32) {
    return hn::LoadU(df, reinterpret_cast<const float*>(src));
  } else if constexpr (kKv == DType::kBFloat16) {
    // bfloat16 is the top half of a float32.
    const hn::Rebind<uint16_t, DF> d16;
    const auto bits = hn::PromoteTo(du, hn::LoadU(d16, reinterpret_cast<const uint16_t*>(src)));
    return hn::BitCast(df, hn::ShiftLeft<16>(bits));
  } else if constexpr (kKv == DType::kFloat8E4M3FN) {
    // Place exponent and mantissa where float32 keeps them, then rescale by
    // 2^(127 - 7): exact for normals and subnormals alike.
    const hn::Rebind<uint8_t, DF> d8;
    const auto x = hn::PromoteTo(du, hn::LoadU(d8, src));
    const auto mag = hn::And(x, hn::Set(du, 0x7Fu));
    const auto sign = hn::ShiftLeft<24>(hn::And(x, hn::Set(du, 0x80u)));
    VF v = hn::Mul(hn::BitCast(df, hn::ShiftLeft<20>(mag)), hn::Set(df, 1.329227995784916e36f /* 2^120 */));
    // e4m3fn has no infinities; S.1111.111 is NaN.
    v = hn::IfThenElse(hn::RebindMask(df, hn::Eq(mag, hn::Set(du, 0x7Fu))), hn::NaN(df), v);
    return hn::Or(v, hn::BitCast(df, sign));
  } else if constexpr (kKv == DType::kFloat16 || kKv == DType::kFloat8E5M2) {
    // IEEE-like formats with 5 exponent bits (bias 15): float16 and e5m2 (the
    // top byte of a float16). Same placement trick, rescale by 2^(127 - 15);
    // exponent 11111 is Inf (mantissa 0) or NaN. Done with integer ops so it
    // does not depend on F16C.
    constexpr int kBits = kKv == DType::kFloat16 ? 16 : 8;
    constexpr int kMan = kKv == DType::kFloat16 ? 10 : 2;
    constexpr uint32_t kSign = 1u << (kBits - 1), kMagMask = kSign - 1;
    constexpr uint32_t kExpMask = 0x1Fu << kMan, kManMask = (1u << kMan) - 1;
    hn::Vec<decltype(du)> x;
    if constexpr (kBits == 16) {
      const hn::Rebind<uint16_t, DF> d16;
      x = hn::PromoteTo(du, hn::LoadU(d16, reinterpret_cast<const uint16_t*>(src)));
    } else {
      const hn::Rebind<uint8_t, DF> d8;
      x = hn::PromoteTo(du, hn::LoadU(d8, src));
    }
    const auto mag = hn::And(x, hn::Set(du, kMagMask));
    const auto sign = hn::ShiftLeft<32 - kBits>(hn::And(x, hn::Set(du, kSign)));
    VF v = hn::Mul(hn::BitCast(df, hn::ShiftLeft<23 - kMan>(mag)), hn::Set(df, 5.192296858534828e33f /* 2^112 */));
    const auto special = hn::Eq(hn::And(mag, hn::Set(du, kExpMask)), hn::Set(du, kExpMask));
    const auto inf_nan =
        hn::Or(hn::Set(du, 0x7F800000u), hn::ShiftLeft<23 - kMan>(hn::And(mag, hn::Set(du, kManMask))));
    v = hn::IfThenElse(hn::RebindMask(df, special), hn::BitCast(df, inf_nan), v);
    return hn::Or(v, hn::BitCast(df, sign));
  } else {  // int8, and int4 stored one sign-extended value a byte
    const hn::RebindToSigned<DF> di;
    const hn::Rebind<int8_t, DF> d8;
    return hn::ConvertTo(df, hn::PromoteTo(di, hn::LoadU(d8, reinterpret_cast<const int8_t*>(src))));
  }
}

// x.astype(q_dtype) widened back (round to nearest even, each format's
// overflow rule). float32 is the identity; bfloat16 and float16 are done
// in SIMD (float16 on AVX2 and up); the rest (q dtypes attention rarely sees) go through the dtype
// model element by element.
HWY_INLINE VF RoundToQ(DF df, DType q, VF x) {
  if (q == DType::kFloat32) return x;
  if (q == DType::kBFloat16) {
    const hn::RebindToUnsigned<DF> du;
    const auto u = hn::BitCast(du, x);
    const auto lsb = hn::And(hn::ShiftRight<16>(u), hn::Set(du, 1u));
    const auto r = hn::And(hn::Add(u, hn::Add(hn::Set(du, 0x7FFFu), lsb)), hn::Set(du, 0xFFFF0000u));
    return hn::IfThenElse(hn::IsNaN(x), x, hn::BitCast(df, r));
  }
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  // vcvtps2ph rounds to nearest even with IEEE overflow; Highway's software
  // fallback on other targets truncates, so those take the scalar path.
  if (q == DType::kFloat16) {
    const hn::Rebind<hwy::float16_t, DF> dh;
    return hn::PromoteTo(df, hn::DemoteTo(dh, x));
  }
#endif
  HWY_ALIGN float tmp[hn::MaxLanes(df)];
  hn::Store(x, df, tmp);
  for (size_t i = 0; i < hn::Lanes(df); ++i) tmp[i] = round_to(q, tmp[i]);
  return hn::Load(df, tmp);
}

// Converts one K or V row of `n` elements to float32 at `dst`, dequantised
// as the reference does when `scaled` (to float32, times the scale, cast to
// q's dtype, kernel.py:118-123), zero-padded to `n_padded` (a multiple of
// the lane count).
template <DType kKv>
HWY_INLINE void ConvertRow(const uint8_t* HWY_RESTRICT src, int64_t n, size_t n_padded, bool scaled, float scale,
                           DType q, float* HWY_RESTRICT dst) {
  const DF df;
  const size_t N = hn::Lanes(df);
  constexpr size_t kBytes = kKv == DType::kFloat32 ? 4 : (kKv == DType::kBFloat16 || kKv == DType::kFloat16) ? 2 : 1;
  const VF vscale = hn::Set(df, scale);
  size_t i = 0;
  for (; i + N <= size_t(n); i += N) {
    VF v = LoadKv<kKv>(df, src + i * kBytes);
    if (scaled) v = RoundToQ(df, q, hn::Mul(v, vscale));
    hn::StoreU(v, df, dst + i);
  }
  if (i < n_padded) {
    // The tail goes through a zeroed staging buffer, so no byte past the
    // row is read and the padding is exactly zero.
    HWY_ALIGN uint8_t stage[hn::MaxLanes(df) * 4] = {};
    std::memcpy(stage, src + i * kBytes, (size_t(n) - i) * kBytes);
    VF v = LoadKv<kKv>(df, stage);
    if (scaled) v = RoundToQ(df, q, hn::Mul(v, vscale));
    const VF zero = hn::Zero(df);
    HWY_ALIGN float out[hn::MaxLanes(df)];
    hn::Store(v, df, out);
    for (size_t k = size_t(n) - i; k < N; ++k) out[k] = 0.0f;
    hn::StoreU(hn::Load(df, out), df, dst + i);
    for (i += N; i < n_padded; i += N) hn::StoreU(zero, df, dst + i);
  }
}

// e^x for x <= 0 with NaN kept (hwy's Exp maps NaN to 0).
HWY_INLINE VF ExpKeepNaN(DF df, VF x) { return hn::IfThenElse(hn::IsNaN(x), x, hn::Exp(df, x)); }

// ExpKeepNaN, in about half the instructions where every lane is in
// [-87, 88] (the softmax's exponents of unmasked scores): round x / ln 2 to
// k with the 1.5 x 2^23 trick, reduce r = x - k ln 2 in two parts (Cody and
// Waite; k x the high part is exact), e^r by a degree-7 polynomial
// (Cephes' expf coefficients), then k added to the exponent field - in
// that range the result is normal, so the integer add is exact. Other
// vectors (masked scores, -inf padding, NaN, results that would be
// subnormal or overflow) take ExpKeepNaN. Within 1.26 ulp of e^x on every
// seventh float in [-87, 0] (ExpKeepNaN: 1.01); on the Zen 3 guest 3.4-4.1
// against 5.9-6.4 ns a vector; in the tile's softmax (BlockSoftmaxB),
// one thread warm, minimum of 15 calls over 4-5 interleaved rounds:
// prefill float32 66.0-66.9 against 68.7-71.4 ms, mixed float32 48.8-50.9
// against 50.7-54.4 ms. The group items' softmax uses it too, and
// from 2026-12-07 AVX-512 as well (WeightExp in tiles-inl.h). tests/kernels/fast_test.cc checks
// it against long double exp.
HWY_INLINE VF ExpFast(DF df, VF x) {
  const hn::RebindToSigned<DF> di;
  const auto in_range = hn::And(hn::Ge(x, hn::Set(df, -87.0f)), hn::Le(x, hn::Set(df, 88.0f)));  // false for NaN
  if (!hn::AllTrue(df, in_range)) return ExpKeepNaN(df, x);
  const VF magic = hn::Set(df, 12582912.0f);  // 1.5 x 2^23: t's low mantissa bits hold round(x / ln 2)
  const VF t = hn::MulAdd(x, hn::Set(df, 1.44269504088896341f), magic);
  const VF k = hn::Sub(t, magic);
  VF r = hn::NegMulAdd(k, hn::Set(df, 0.693359375f), x);  // ln 2's high part: 355 / 512
  r = hn::NegMulAdd(k, hn::Set(df, -2.12194440e-4f), r);  // and the rest
  VF p = hn::Set(df, 1.9875691500e-4f);
  p = hn::MulAdd(p, r, hn::Set(df, 1.3981999507e-3f));
  p = hn::MulAdd(p, r, hn::Set(df, 8.3334519073e-3f));
  p = hn::MulAdd(p, r, hn::Set(df, 4.1665795894e-2f));
  p = hn::MulAdd(p, r, hn::Set(df, 1.6666665459e-1f));
  p = hn::MulAdd(p, r, hn::Set(df, 5.0000001201e-1f));
  p = hn::MulAdd(p, hn::Mul(r, r), hn::Add(r, hn::Set(df, 1.0f)));  // e^r in [0.70, 1.42]
  const auto ki = hn::Sub(hn::BitCast(di, t), hn::BitCast(di, magic));
  return hn::BitCast(df, hn::Add(hn::BitCast(di, p), hn::ShiftLeft<23>(ki)));
}

}  // namespace rpa::fast::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // RPA_FAST_CONVERT_INL_H_
