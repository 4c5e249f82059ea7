// Tests of Python 3.11 repr and comparison of scalar options (expected strings are CPython 3.11's output).
#include "oracle/py_value.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace rpa {
namespace {

TEST(PyFloatRepr, MatchesCPython) {
  // Inputs as exact hex literals; strings printed by CPython 3.11.7 repr().
  struct Row {
    double x;
    const char* repr;
  };
  const Row rows[] = {
      {0x0.0p+0, "0.0"},
      {-0x0.0p+0, "-0.0"},
      {0x1.8p+0, "1.5"},
      {-0x1.8p+0, "-1.5"},
      {0x1.4f8b588e368f1p-17, "1e-05"},
      {0x1.a36e2eb1c432dp-14, "0.0001"},
      {0x1.1c37937e08000p+53, "1e+16"},
      {0x1.aa535d3d0c000p+53, "1.5e+16"},
      {0x1.c6bf526340000p+49, "1000000000000000.0"},
      {0x1.edd2f1a9fbe77p+6, "123.456"},
      {0x1.999999999999ap-4, "0.1"},
      {0x1.5555555555555p-2, "0.3333333333333333"},
      {0x0.0000000000001p-1022, "5e-324"},
      {0x0.0000000000003p-1022, "1.5e-323"},
      {0x1.fffffffffffffp+1023, "1.7976931348623157e+308"},
      {0x1.a36e2eb1c432dp-16, "2.5e-05"},
      {0x1.5ee2a2eb5a5c4p+53, "1.2345678901234568e+16"},
      {0x1.1c37937e07fffp+53, "9999999999999998.0"},
      {0x1.0f0cf064dd592p+73, "1e+22"},
      {0x1.9f3c70c996b77p-14, "9.900000000000001e-05"},
      {0x1.9p+6, "100.0"},
      {-0x1.6666650000000p+127, "-2.381976426469702e+38"},
      {0x1.52d02c7e14af6p+76, "1e+23"},
  };
  for (const auto& r : rows) EXPECT_EQ(py_float_repr(r.x), r.repr) << std::hexfloat << r.x;
  EXPECT_EQ(py_float_repr(std::numeric_limits<double>::quiet_NaN()), "nan");
  EXPECT_EQ(py_float_repr(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(py_float_repr(-std::numeric_limits<double>::infinity()), "-inf");
}

TEST(PyRepr, EveryKind) {
  EXPECT_EQ(py_repr(PyValue::none()), "None");
  EXPECT_EQ(py_repr(PyValue::boolean(true)), "True");
  EXPECT_EQ(py_repr(PyValue::boolean(false)), "False");
  EXPECT_EQ(py_repr(PyValue::integer(-12)), "-12");
  EXPECT_EQ(py_repr(PyValue::integer(BigInt(1) << 70)), "1180591620717411303424");
  EXPECT_EQ(py_repr(PyValue::floating(3.0)), "3.0");
}

// Properties of repr: it round-trips, and it is in scientific notation
// exactly when the decimal exponent is outside [-4, 16).
RC_GTEST_PROP(PyFloatRepr, RoundTripsAndPicksNotation, (uint64_t bits)) {
  const double x = std::bit_cast<double>(bits);
  RC_PRE(std::isfinite(x));
  const std::string s = py_float_repr(x);
  RC_ASSERT(std::strtod(s.c_str(), nullptr) == x);
  RC_ASSERT(std::signbit(std::strtod(s.c_str(), nullptr)) == std::signbit(x));
  if (x != 0.0) {
    const int e10 = static_cast<int>(std::floor(std::log10(std::fabs(x))));
    const bool sci = s.find('e') != std::string::npos;
    // log10 may misjudge exact powers of ten by one; skip the boundary.
    if (e10 > -4 && e10 < 15) RC_ASSERT(!sci);
    if (e10 < -5 || e10 > 16) RC_ASSERT(sci);
  }
  if (s.find('e') == std::string::npos) RC_ASSERT(s.find('.') != std::string::npos);
}

TEST(PyCompare, ExactAgainstIntegers) {
  // 2^53 + 1 is not a double: the float 2^53 is below it, exactly.
  const BigInt two53 = BigInt(1) << 53;
  EXPECT_EQ(py_compare(PyValue::floating(0x1p53), two53 + 1), -1);
  EXPECT_EQ(py_compare(PyValue::floating(0x1p53), two53), 0);
  EXPECT_EQ(py_compare(PyValue::floating(0x1p100), BigInt(1) << 100), 0);
  EXPECT_EQ(py_compare(PyValue::floating(0x1p100), (BigInt(1) << 100) - 1), 1);
  EXPECT_EQ(py_compare(PyValue::floating(0.5), 0), 1);
  EXPECT_EQ(py_compare(PyValue::floating(-0.5), 0), -1);
  EXPECT_EQ(py_compare(PyValue::floating(-0.5), -1), 1);
  EXPECT_EQ(py_compare(PyValue::floating(2.5), 2), 1);
  EXPECT_EQ(py_compare(PyValue::floating(2.5), 3), -1);
  EXPECT_EQ(py_compare(PyValue::floating(-0.0), 0), 0);
  EXPECT_EQ(py_compare(PyValue::floating(std::numeric_limits<double>::quiet_NaN()), 0), 2);
  EXPECT_EQ(py_compare(PyValue::floating(std::numeric_limits<double>::infinity()), BigInt(1) << 2000), 1);
  EXPECT_EQ(py_compare(PyValue::floating(-std::numeric_limits<double>::infinity()), -(BigInt(1) << 2000)), -1);
  EXPECT_EQ(py_compare(PyValue::boolean(true), 1), 0);
  EXPECT_EQ(py_compare(PyValue::boolean(false), 1), -1);
  EXPECT_EQ(py_compare(PyValue::integer(BigInt(1) << 70), BigInt(1) << 69), 1);
  EXPECT_TRUE(py_equals_zero(PyValue::integer(0)));
  EXPECT_TRUE(py_equals_zero(PyValue::boolean(false)));
  EXPECT_TRUE(py_equals_zero(PyValue::floating(-0.0)));
  EXPECT_FALSE(py_equals_zero(PyValue::floating(0x1p-1074)));
  EXPECT_FALSE(py_equals_zero(PyValue::floating(std::numeric_limits<double>::quiet_NaN())));
}

// Against an independent rule: for integers that doubles hold exactly, the
// comparison is the comparison of the integers.
RC_GTEST_PROP(PyCompare, AgreesWithIntegerComparison, (int32_t a, int32_t b)) {
  const int expect = a < b ? -1 : (a > b ? 1 : 0);
  RC_ASSERT(py_compare(PyValue::floating(a), b) == expect);
  RC_ASSERT(py_compare(PyValue::integer(a), b) == expect);
  // a + 0.5 lies strictly between a and a + 1.
  RC_ASSERT(py_compare(PyValue::floating(a + 0.5), b) == (a < b ? -1 : 1));
}

}  // namespace
}  // namespace rpa
