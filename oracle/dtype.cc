// The dtype table and the bit-exact conversions behind oracle/dtype.h.
#include "oracle/dtype.h"

#include <array>
#include <bit>
#include <cmath>
#include <limits>

namespace rpa {
namespace {

using K = DTypeKind;

// The single table of dtypes. Bits follow jax._src.dtypes.itemsize_bits
// (dtypes.py:282-297 at cec06d116c): bool is 8, complex is twice its float.
constexpr std::array<DTypeInfo, 32> kTable{{
    {DType::kFloat32, "float32", 32, K::kFloat, false, true},
    {DType::kBFloat16, "bfloat16", 16, K::kFloat, true, true},
    {DType::kFloat16, "float16", 16, K::kFloat, false, true},
    {DType::kFloat8E4M3FN, "float8_e4m3fn", 8, K::kFloat, true, true},
    {DType::kFloat8E5M2, "float8_e5m2", 8, K::kFloat, true, true},
    {DType::kInt8, "int8", 8, K::kSignedInt, false, true},
    {DType::kInt4, "int4", 4, K::kSignedInt, true, true},
    {DType::kFloat64, "float64", 64, K::kFloat, false, false},
    {DType::kInt16, "int16", 16, K::kSignedInt, false, false},
    {DType::kInt32, "int32", 32, K::kSignedInt, false, false},
    {DType::kInt64, "int64", 64, K::kSignedInt, false, false},
    {DType::kUInt4, "uint4", 4, K::kUnsignedInt, true, false},
    {DType::kUInt8, "uint8", 8, K::kUnsignedInt, false, false},
    {DType::kUInt16, "uint16", 16, K::kUnsignedInt, false, false},
    {DType::kUInt32, "uint32", 32, K::kUnsignedInt, false, false},
    {DType::kUInt64, "uint64", 64, K::kUnsignedInt, false, false},
    {DType::kBool, "bool", 8, K::kBool, false, false},
    {DType::kComplex64, "complex64", 64, K::kComplex, false, false},
    {DType::kComplex128, "complex128", 128, K::kComplex, false, false},
    {DType::kFloat8E4M3FNUZ, "float8_e4m3fnuz", 8, K::kFloat, true, false},
    {DType::kFloat8E5M2FNUZ, "float8_e5m2fnuz", 8, K::kFloat, true, false},
    {DType::kFloat8E4M3B11FNUZ, "float8_e4m3b11fnuz", 8, K::kFloat, true, false},
    {DType::kInt2, "int2", 2, K::kSignedInt, true, false},
    {DType::kUInt2, "uint2", 2, K::kUnsignedInt, true, false},
    {DType::kFloat8E3M4, "float8_e3m4", 8, K::kFloat, true, false},
    {DType::kFloat8E4M3, "float8_e4m3", 8, K::kFloat, true, false},
    {DType::kFloat8E8M0FNU, "float8_e8m0fnu", 8, K::kFloat, true, false},
    {DType::kFloat4E2M1FN, "float4_e2m1fn", 4, K::kFloat, true, false},
    // 6-bit floats: packing 32 // 6 = 5.
    {DType::kFloat6E2M3FN, "float6_e2m3fn", 6, K::kFloat, true, false},
    {DType::kFloat6E3M2FN, "float6_e3m2fn", 6, K::kFloat, true, false},
    {DType::kInt1, "int1", 1, K::kSignedInt, true, false},
    {DType::kUInt1, "uint1", 1, K::kUnsignedInt, true, false},
}};
static_assert([] {
  for (size_t i = 0; i < kTable.size(); ++i)
    if (static_cast<size_t>(kTable[i].id) != i) return false;
  return true;
}(), "kTable must be indexed by DType");

constexpr std::array<DType, 7> kComputable{DType::kFloat32,      DType::kBFloat16,   DType::kFloat16,
                                           DType::kFloat8E4M3FN, DType::kFloat8E5M2, DType::kInt8,
                                           DType::kInt4};

// A small binary float format. `ieee`: the all-ones exponent encodes inf
// (mantissa 0) and NaN; otherwise (e4m3fn) only S.1111.111 is NaN and there
// is no infinity.
struct FloatFormat {
  int exp_bits;
  int man_bits;
  int bias;
  bool ieee;
};

constexpr FloatFormat format_of(DType d) {
  switch (d) {
    case DType::kBFloat16: return {8, 7, 127, true};
    case DType::kFloat16: return {5, 10, 15, true};
    case DType::kFloat8E4M3FN: return {4, 3, 7, false};
    case DType::kFloat8E5M2: return {5, 2, 15, true};
    default: return {8, 23, 127, true};
  }
}

double format_max(const FloatFormat& f) {
  const int emax_field = (1 << f.exp_bits) - (f.ieee ? 2 : 1);
  // e4m3fn: the top exponent keeps all mantissas but the all-ones one.
  const int top_mantissa = f.ieee ? (1 << f.man_bits) - 1 : (1 << f.man_bits) - 2;
  return std::ldexp(1.0 + std::ldexp(double(top_mantissa), -f.man_bits), emax_field - f.bias);
}

float decode_small(const FloatFormat& f, uint32_t bits) {
  const int total = 1 + f.exp_bits + f.man_bits;
  const uint32_t sign = (bits >> (total - 1)) & 1u;
  const uint32_t exp = (bits >> f.man_bits) & ((1u << f.exp_bits) - 1u);
  const uint32_t man = bits & ((1u << f.man_bits) - 1u);
  const uint32_t exp_all_ones = (1u << f.exp_bits) - 1u;
  double v;
  if (f.ieee && exp == exp_all_ones) {
    v = man == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  } else if (!f.ieee && exp == exp_all_ones && man == (1u << f.man_bits) - 1u) {
    v = std::numeric_limits<double>::quiet_NaN();
  } else if (exp == 0) {
    v = std::ldexp(double(man), 1 - f.bias - f.man_bits);
  } else {
    v = std::ldexp(double(man | (1u << f.man_bits)), int(exp) - f.bias - f.man_bits);
  }
  return static_cast<float>(sign ? -v : v);
}

uint32_t encode_small(const FloatFormat& f, float xf) {
  const int total = 1 + f.exp_bits + f.man_bits;
  const uint32_t sign_bit = std::signbit(xf) ? (1u << (total - 1)) : 0u;
  const uint32_t exp_all_ones = (1u << f.exp_bits) - 1u;
  const uint32_t nan_bits = f.ieee ? (exp_all_ones << f.man_bits) | (1u << (f.man_bits - 1))
                                   : (exp_all_ones << f.man_bits) | ((1u << f.man_bits) - 1u);
  const uint32_t inf_bits = exp_all_ones << f.man_bits;
  if (std::isnan(xf)) return sign_bit | nan_bits;
  const double ax = std::fabs(double(xf));
  if (std::isinf(ax)) return sign_bit | (f.ieee ? inf_bits : nan_bits);
  if (ax == 0.0) return sign_bit;
  // Round |x| to the quantum of its binade (or the subnormal quantum),
  // ties to even. |x| / quantum is exact in double (a power-of-two scaling
  // of a float32) and nearbyint rounds to nearest even.
  const int emin = 1 - f.bias;
  int e = std::ilogb(ax);
  if (e < emin) e = emin;
  const int q_exp = e - f.man_bits;
  const double n = std::nearbyint(std::ldexp(ax, -q_exp));
  const double r = std::ldexp(n, q_exp);
  if (r > format_max(f)) return sign_bit | (f.ieee ? inf_bits : nan_bits);
  if (r == 0.0) return sign_bit;
  // Build the fields of the (exactly representable) result.
  int re = std::ilogb(r);
  if (re < emin) {  // subnormal: exponent field 0
    return sign_bit | static_cast<uint32_t>(std::ldexp(r, -(emin - f.man_bits)));
  }
  const uint32_t man = static_cast<uint32_t>(std::ldexp(r, -(re - f.man_bits))) - (1u << f.man_bits);
  return sign_bit | (uint32_t(re + f.bias) << f.man_bits) | man;
}

// XLA's float -> signed integer convert on CPU: truncate toward zero,
// saturate at the limits, NaN -> 0.
uint32_t encode_int(float x, int bits) {
  const double lo = -std::ldexp(1.0, bits - 1), hi = std::ldexp(1.0, bits - 1) - 1;
  double t = std::isnan(x) ? 0.0 : std::trunc(double(x));
  if (t < lo) t = lo;
  if (t > hi) t = hi;
  return static_cast<uint32_t>(static_cast<int32_t>(t)) & ((1u << bits) - 1u);
}

float decode_int(uint32_t bits, int width) {
  const uint32_t mask = (1u << width) - 1u;
  int32_t v = int32_t(bits & mask);
  if (v & (1 << (width - 1))) v -= (1 << width);
  return float(v);
}

}  // namespace

const DTypeInfo& dtype_info(DType dtype) { return kTable[static_cast<size_t>(dtype)]; }

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const auto& d : kTable)
    if (d.name == name) return d.id;
  return std::nullopt;
}

std::span<const DTypeInfo> all_dtypes() { return kTable; }
std::span<const DType> computable_dtypes() { return kComputable; }

std::string dtype_repr(DType d) {
  const auto& i = dtype_info(d);
  if (i.from_ml_dtypes) return "dtype(" + std::string(i.name) + ")";
  return "dtype('" + std::string(i.name) + "')";
}

int dtype_packing(DType d) { return 32 / dtype_bits(d); }

uint32_t encode(DType d, float x) {
  switch (d) {
    case DType::kFloat32: return std::bit_cast<uint32_t>(x);
    case DType::kInt8: return encode_int(x, 8);
    case DType::kInt4: return encode_int(x, 4);
    case DType::kBFloat16:
    case DType::kFloat16:
    case DType::kFloat8E4M3FN:
    case DType::kFloat8E5M2: return encode_small(format_of(d), x);
    default: return 0;
  }
}

float decode(DType d, uint32_t bits) {
  switch (d) {
    case DType::kFloat32: return std::bit_cast<float>(bits);
    case DType::kInt8: return decode_int(bits, 8);
    case DType::kInt4: return decode_int(bits, 4);
    case DType::kBFloat16:
    case DType::kFloat16:
    case DType::kFloat8E4M3FN:
    case DType::kFloat8E5M2: return decode_small(format_of(d), bits);
    default: return 0.0f;
  }
}

bool representable(DType d, double x) {
  if (!dtype_info(d).computable) return false;
  if (std::isnan(x)) return dtype_info(d).kind == DTypeKind::kFloat;
  const float xf = static_cast<float>(x);
  if (double(xf) != x && !std::isinf(x)) return false;  // not even a float32
  if (std::isinf(x)) {
    return d == DType::kFloat32 || d == DType::kBFloat16 || d == DType::kFloat16 || d == DType::kFloat8E5M2;
  }
  const float r = round_to(d, xf);
  return r == xf && std::signbit(r) == std::signbit(xf);
}

double unit_roundoff(DType d) {
  if (dtype_info(d).kind != DTypeKind::kFloat) return 0.0;
  return std::ldexp(1.0, -(mantissa_bits(d) + 1));
}

int mantissa_bits(DType d) {
  if (dtype_info(d).kind != DTypeKind::kFloat || !dtype_info(d).computable) {
    return d == DType::kFloat64 ? 52 : 0;
  }
  return format_of(d).man_bits;
}

double max_finite(DType d) {
  switch (d) {
    case DType::kFloat32: return std::numeric_limits<float>::max();
    case DType::kInt8: return 127;
    case DType::kInt4: return 7;
    case DType::kBFloat16:
    case DType::kFloat16:
    case DType::kFloat8E4M3FN:
    case DType::kFloat8E5M2: return format_max(format_of(d));
    default: return 0;
  }
}

uint32_t pack_word(DType d, std::span<const uint32_t> element_bits) {
  const int bits = dtype_bits(d);
  const uint32_t mask = bits >= 32 ? 0xFFFFFFFFu : (1u << bits) - 1u;
  uint32_t w = 0;
  for (size_t j = 0; j < element_bits.size(); ++j) w |= (element_bits[j] & mask) << (j * bits);
  return w;
}

uint32_t unpack_word(DType d, uint32_t word, int j) {
  const int bits = dtype_bits(d);
  if (bits >= 32) return word;
  return (word >> (j * bits)) & ((1u << bits) - 1u);
}

}  // namespace rpa
