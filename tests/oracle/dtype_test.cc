// Tests of the dtype model against an independent derivation in exact rational arithmetic.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <bit>
#include <boost/multiprecision/cpp_int.hpp>
#include <cmath>
#include <limits>
#include <map>
#include <vector>

#include "oracle/dtype.h"

namespace rpa {
namespace {

using Rational = boost::multiprecision::cpp_rational;

// The formats as ml_dtypes documents them (ml_dtypes README, "float8_e4m3fn:
// no infinities, NaN is S.1111.111"; IEEE 754 binary16; bfloat16 = the top
// half of binary32; e5m2 = IEEE-style with inf and NaN), written out here
// independently of oracle/dtype.cc.
struct Spec {
  DType dtype;
  int e, m, bias;
  bool has_inf;  // all-ones exponent: inf (m = 0) and NaN (m != 0)
};
const Spec kSpecs[] = {
    {DType::kBFloat16, 8, 7, 127, true},
    {DType::kFloat16, 5, 10, 15, true},
    {DType::kFloat8E4M3FN, 4, 3, 7, false},
    {DType::kFloat8E5M2, 5, 2, 15, true},
};

Rational pow2(int k) {
  Rational r = 1;
  if (k >= 0) r = Rational(boost::multiprecision::cpp_int(1) << k);
  else r = Rational(1, boost::multiprecision::cpp_int(1) << -k);
  return r;
}

// Exact rational value of a float (finite).
Rational exact(double x) {
  int e;
  double f = std::frexp(x, &e);  // x = f * 2^e, f in [0.5, 1)
  auto mant = static_cast<long long>(std::ldexp(f, 60));
  return Rational(mant) * pow2(e - 60);
}

enum class Cls { kFinite, kInf, kNaN };
struct Value {
  Cls cls;
  bool neg;
  Rational mag;
};

Value spec_value(const Spec& s, uint32_t bits) {
  const int total = 1 + s.e + s.m;
  const bool neg = (bits >> (total - 1)) & 1;
  const uint32_t ef = (bits >> s.m) & ((1u << s.e) - 1), mf = bits & ((1u << s.m) - 1);
  const uint32_t all = (1u << s.e) - 1;
  if (s.has_inf && ef == all) return {mf == 0 ? Cls::kInf : Cls::kNaN, neg, 0};
  if (!s.has_inf && ef == all && mf == (1u << s.m) - 1) return {Cls::kNaN, neg, 0};
  Rational mag = ef == 0 ? Rational(mf) * pow2(1 - s.bias - s.m)
                         : Rational((1u << s.m) + mf) * pow2(int(ef) - s.bias - s.m);
  return {Cls::kFinite, neg, mag};
}

class FloatFormatTest : public ::testing::TestWithParam<Spec> {};

TEST_P(FloatFormatTest, EveryPatternDecodesToItsExactValueAndReencodesToItself) {
  const Spec s = GetParam();
  const uint32_t n = 1u << (1 + s.e + s.m);
  int nans = 0;
  for (uint32_t b = 0; b < n; ++b) {
    const Value v = spec_value(s, b);
    const float d = decode(s.dtype, b);
    if (v.cls == Cls::kNaN) {
      ++nans;
      EXPECT_TRUE(std::isnan(d)) << b;
      EXPECT_TRUE(std::isnan(decode(s.dtype, encode(s.dtype, d)))) << b;
      continue;
    }
    EXPECT_EQ(std::signbit(d), v.neg) << b;
    if (v.cls == Cls::kInf) {
      EXPECT_TRUE(std::isinf(d)) << b;
    } else {
      ASSERT_TRUE(std::isfinite(d)) << b;
      EXPECT_EQ(exact(std::fabs(d)), v.mag) << "pattern " << b;
    }
    EXPECT_EQ(encode(s.dtype, d), b) << "pattern " << b;
  }
  // NaN patterns: IEEE-style formats have 2 * (2^m - 1); e4m3fn only two.
  EXPECT_EQ(nans, s.has_inf ? 2 * ((1 << s.m) - 1) : 2);
}

// Sorted non-negative finite values with their patterns.
std::vector<std::pair<Rational, uint32_t>> finite_values(const Spec& s) {
  std::vector<std::pair<Rational, uint32_t>> out;
  const uint32_t half = 1u << (s.e + s.m);
  for (uint32_t b = 0; b < half; ++b) {
    Value v = spec_value(s, b);
    if (v.cls == Cls::kFinite) out.emplace_back(v.mag, b);
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST_P(FloatFormatTest, EveryMidpointRoundsToEvenAndNeighboursRoundToNearest) {
  const Spec s = GetParam();
  const auto vals = finite_values(s);
  for (size_t i = 0; i + 1 < vals.size(); ++i) {
    const Rational mid = (vals[i].first + vals[i + 1].first) / 2;
    const float m = static_cast<float>(static_cast<double>(mid));
    ASSERT_EQ(exact(m), mid) << "midpoint not a float32";  // few bits: always exact
    const uint32_t even = (vals[i].second & 1) == 0 ? vals[i].second : vals[i + 1].second;
    EXPECT_EQ(encode(s.dtype, m), even) << "midpoint of patterns " << vals[i].second;
    EXPECT_EQ(encode(s.dtype, -m), even | (1u << (s.e + s.m)));
    EXPECT_EQ(encode(s.dtype, std::nextafter(m, 0.0f)), vals[i].second);
    EXPECT_EQ(encode(s.dtype, std::nextafter(m, INFINITY)), vals[i + 1].second);
  }
}

TEST_P(FloatFormatTest, OverflowFollowsTheFormatsRule) {
  const Spec s = GetParam();
  const auto vals = finite_values(s);
  const Rational max = vals.back().first;
  const Rational ulp = max - vals[vals.size() - 2].first;
  const float above_half = static_cast<float>(static_cast<double>(max + ulp / 2));
  const float below_half = std::nextafter(above_half, 0.0f);
  const uint32_t sign = 1u << (s.e + s.m);
  EXPECT_EQ(encode(s.dtype, below_half), vals.back().second);
  const float big = above_half;  // the tie: rounds away from the odd max
  const float beyond = std::nextafter(above_half, INFINITY);
  for (float x : {big, beyond, std::numeric_limits<float>::max(), INFINITY}) {
    const float d = decode(s.dtype, encode(s.dtype, x));
    const float dn = decode(s.dtype, encode(s.dtype, -x));
    if (s.has_inf) {
      EXPECT_TRUE(std::isinf(d) && d > 0) << x;
      EXPECT_TRUE(std::isinf(dn) && dn < 0) << x;
    } else {
      // e4m3fn: the max mantissa is even (110), so the tie 464 rounds down.
      if (x == big) {
        EXPECT_EQ(encode(s.dtype, x), vals.back().second);
      } else {
        EXPECT_TRUE(std::isnan(d)) << x;
        EXPECT_TRUE(std::isnan(dn)) << x;
      }
    }
  }
  (void)sign;
}

TEST_P(FloatFormatTest, SubnormalAndSignedZeroEdges) {
  const Spec s = GetParam();
  const uint32_t sign = 1u << (s.e + s.m);
  const float tiny = static_cast<float>(static_cast<double>(pow2(1 - s.bias - s.m)));
  EXPECT_EQ(encode(s.dtype, tiny), 1u);
  EXPECT_EQ(encode(s.dtype, tiny / 2), 0u);                           // tie -> even (zero)
  EXPECT_EQ(encode(s.dtype, std::nextafter(tiny / 2, 1.0f)), 1u);     // just above the tie
  EXPECT_EQ(encode(s.dtype, -tiny / 2), sign);                        // negative zero kept
  EXPECT_EQ(encode(s.dtype, 0.0f), 0u);
  EXPECT_EQ(encode(s.dtype, -0.0f), sign);
  EXPECT_TRUE(std::signbit(decode(s.dtype, sign)));
  EXPECT_EQ(encode(s.dtype, 1.5f * tiny), 2u);  // tie between 1 and 2 -> even
  EXPECT_EQ(encode(s.dtype, 2.5f * tiny), 2u);
}

INSTANTIATE_TEST_SUITE_P(Formats, FloatFormatTest, ::testing::ValuesIn(kSpecs),
                         [](const auto& info) { return std::string(dtype_name(info.param.dtype)); });

// Any float32 rounds to the nearest value of the format, ties to the even
// pattern, with the overflow rule: checked against a search over the table.
RC_GTEST_PROP(DtypeProperty, EncodeIsNearestEven, (uint32_t raw, uint8_t which)) {
  const Spec& s = kSpecs[which % 4];
  const float x = std::bit_cast<float>(raw);
  RC_PRE(std::isfinite(x));
  static std::map<int, std::vector<std::pair<Rational, uint32_t>>> cache;
  auto& vals = cache[which % 4];
  if (vals.empty()) vals = finite_values(s);
  const Rational ax = exact(std::fabs(double(x)));
  const uint32_t sign = std::signbit(x) ? (1u << (s.e + s.m)) : 0u;
  auto it = std::lower_bound(vals.begin(), vals.end(), std::make_pair(ax, uint32_t(0)),
                             [](const auto& a, const auto& b) { return a.first < b.first; });
  const float got = decode(s.dtype, encode(s.dtype, x));
  if (it == vals.end()) {
    // Beyond max: nearest-even against the value one ulp past max.
    const Rational max = vals.back().first, ulp = max - vals[vals.size() - 2].first;
    if (ax < max + ulp / 2 || (!s.has_inf && ax == max + ulp / 2)) {
      RC_ASSERT(encode(s.dtype, x) == (vals.back().second | sign));
    } else if (s.has_inf) {
      RC_ASSERT(std::isinf(got));
    } else {
      RC_ASSERT(std::isnan(got));
    }
    return;
  }
  uint32_t expect;
  if (it->first == ax || it == vals.begin()) {
    expect = it->second;
  } else {
    auto lo = std::prev(it);
    const Rational dl = ax - lo->first, dh = it->first - ax;
    if (dl < dh) expect = lo->second;
    else if (dh < dl) expect = it->second;
    else expect = (lo->second & 1) == 0 ? lo->second : it->second;
  }
  RC_ASSERT(encode(s.dtype, x) == (expect | sign));
}

TEST(DtypeInt, EveryPatternDecodesAsTwosComplement) {
  for (uint32_t b = 0; b < 256; ++b) {
    EXPECT_EQ(decode(DType::kInt8, b), float(b < 128 ? int(b) : int(b) - 256));
    EXPECT_EQ(encode(DType::kInt8, decode(DType::kInt8, b)), b);
  }
  for (uint32_t b = 0; b < 16; ++b) {
    EXPECT_EQ(decode(DType::kInt4, b), float(b < 8 ? int(b) : int(b) - 16));
    EXPECT_EQ(encode(DType::kInt4, decode(DType::kInt4, b)), b);
  }
}

TEST(DtypeInt, ConversionTruncatesSaturatesAndMapsNanToZero) {
  // XLA's convert on CPU (see oracle/dtype.h).
  EXPECT_EQ(decode(DType::kInt8, encode(DType::kInt8, 3.7f)), 3.0f);
  EXPECT_EQ(decode(DType::kInt8, encode(DType::kInt8, -3.7f)), -3.0f);
  EXPECT_EQ(decode(DType::kInt8, encode(DType::kInt8, 1000.0f)), 127.0f);
  EXPECT_EQ(decode(DType::kInt8, encode(DType::kInt8, -1000.0f)), -128.0f);
  EXPECT_EQ(decode(DType::kInt8, encode(DType::kInt8, NAN)), 0.0f);
  EXPECT_EQ(decode(DType::kInt4, encode(DType::kInt4, 7.9f)), 7.0f);
  EXPECT_EQ(decode(DType::kInt4, encode(DType::kInt4, -9.0f)), -8.0f);
  EXPECT_EQ(decode(DType::kInt4, encode(DType::kInt4, -INFINITY)), -8.0f);
}

TEST(DtypeFloat32, BitsAreTheIeeeBits) {
  for (uint32_t b : {0u, 0x80000000u, 0x3F800000u, 0x00000001u, 0x7F7FFFFFu, 0x7F800000u, 0xFF800000u}) {
    EXPECT_EQ(encode(DType::kFloat32, decode(DType::kFloat32, b)), b);
  }
}

TEST(DtypeTable, PackingIs32OverItemsizeBits) {
  // itemsize in bits as numpy / ml_dtypes define the types.
  const std::map<std::string, int> bits = {
      {"float32", 32}, {"bfloat16", 16}, {"float16", 16}, {"float8_e4m3fn", 8}, {"float8_e5m2", 8},
      {"int8", 8},     {"int4", 4},      {"float64", 64}, {"int16", 16},        {"int32", 32},
      {"int64", 64},   {"uint4", 4},     {"uint8", 8},    {"uint16", 16},       {"uint32", 32},
      {"uint64", 64},  {"bool", 8},      {"complex64", 64}, {"complex128", 128}, {"int2", 2}, {"uint2", 2},
      {"float8_e3m4", 8}, {"float8_e4m3", 8}, {"float8_e8m0fnu", 8}, {"float4_e2m1fn", 4}, {"float6_e2m3fn", 6},
      {"float6_e3m2fn", 6}, {"int1", 1}, {"uint1", 1}};
  for (const auto& [name, b] : bits) {
    auto d = dtype_from_name(name);
    ASSERT_TRUE(d) << name;
    EXPECT_EQ(dtype_packing(*d), 32 / b) << name;
    EXPECT_EQ(dtype_name(*d), name);
  }
  EXPECT_FALSE(dtype_from_name("float128"));
  EXPECT_EQ(dtype_repr(DType::kInt64), "dtype('int64')");
  EXPECT_EQ(dtype_repr(DType::kBFloat16), "dtype(bfloat16)");
  EXPECT_EQ(dtype_repr(DType::kFloat8E4M3FN), "dtype(float8_e4m3fn)");
  EXPECT_EQ(dtype_repr(DType::kBool), "dtype('bool')");
}

TEST(DtypePacking, WordsHoldConsecutiveRowsLowBitsFirst) {
  // bfloat16 K (row 0) in the low half, V (row 1) in the high half: the
  // kernel's `b << 16` takes K and `b & 0xFFFF0000` takes V.
  const uint32_t k = encode(DType::kBFloat16, 1.5f), v = encode(DType::kBFloat16, -2.0f);
  const uint32_t elems[] = {k, v};
  const uint32_t w = pack_word(DType::kBFloat16, elems);
  EXPECT_EQ(std::bit_cast<float>(w << 16), 1.5f);
  EXPECT_EQ(std::bit_cast<float>(w & 0xFFFF0000u), -2.0f);
  for (DType d : {DType::kFloat8E4M3FN, DType::kFloat8E5M2, DType::kInt8, DType::kInt4, DType::kFloat16}) {
    const int p = dtype_packing(d);
    std::vector<uint32_t> e(p);
    for (int j = 0; j < p; ++j) e[j] = uint32_t(j * 5 + 3) & ((1u << dtype_bits(d)) - 1);
    const uint32_t word = pack_word(d, e);
    for (int j = 0; j < p; ++j) {
      EXPECT_EQ(unpack_word(d, word, j), e[j]);
      // The kernel's view: (word >> j*bits) truncated to the element width.
      EXPECT_EQ((word >> (j * dtype_bits(d))) & ((1u << dtype_bits(d)) - 1), e[j]);
    }
  }
}

}  // namespace
}  // namespace rpa
