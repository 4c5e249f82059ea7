// Python 3.11's repr and comparisons of the scalar keyword arguments (None, bool, int, float).
#include "oracle/py_value.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>
#include <system_error>

namespace rpa {

double PyValue::as_double() const {
  switch (kind) {
    case Kind::kNone: return 0.0;
    case Kind::kBool: return b ? 1.0 : 0.0;
    case Kind::kInt: return i.convert_to<double>();
    case Kind::kFloat: return f;
  }
  return 0.0;
}

// float_repr_style 'short' (Python/pystrtod.c, PyOS_double_to_string with
// 'r'): the shortest digits that round-trip; with the scientific exponent
// e, fixed notation when -4 <= e < 16 (".0" appended when integral),
// otherwise d[.ddd]e[+-]XX with at least two exponent digits.
std::string py_float_repr(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  char buf[64];
  // Shortest round-trip digits in scientific form, e.g. "-1.5e+16", "1e-05".
  auto res = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific);
  std::string s(buf, res.ptr);
  std::string sign;
  if (s[0] == '-') sign = "-", s.erase(0, 1);
  const auto epos = s.find('e');
  std::string digits;  // the significant digits, no point
  for (size_t k = 0; k < epos; ++k)
    if (s[k] != '.') digits += s[k];
  const int exp10 = std::atoi(s.c_str() + epos + 1);
  if (exp10 < -4 || exp10 >= 16) {
    std::string out = sign + digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    const int mag = std::abs(exp10);
    out += exp10 < 0 ? "e-" : "e+";
    if (mag < 10) out += "0";
    out += std::to_string(mag);
    return out;
  }
  std::string out;
  if (exp10 < 0) {
    out = "0." + std::string(static_cast<size_t>(-exp10 - 1), '0') + digits;
  } else {
    const size_t int_len = static_cast<size_t>(exp10) + 1;
    if (digits.size() <= int_len) {
      out = digits + std::string(int_len - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, int_len) + "." + digits.substr(int_len);
    }
  }
  return sign + out;
}

std::string py_repr(const PyValue& v) {
  switch (v.kind) {
    case PyValue::Kind::kNone: return "None";
    case PyValue::Kind::kBool: return v.b ? "True" : "False";
    case PyValue::Kind::kInt: return v.i.str();
    case PyValue::Kind::kFloat: return py_float_repr(v.f);
  }
  return "None";
}

namespace {

// -1, 0 or 1 as a is less than, equal to or greater than b.
int cmp(const BigInt& a, const BigInt& b) { return a < b ? -1 : (b < a ? 1 : 0); }

// Exact comparison of a finite double with an integer (CPython's
// float_richcompare compares the exact values, never a rounded one).
int compare_double_int(double x, const BigInt& y) {
  const double fl = std::floor(x);
  // fl is an integer-valued double: convert it exactly (|fl| < 2^1024).
  int e = 0;
  const double m = std::frexp(fl, &e);  // fl = m * 2^e, 0.5 <= |m| < 1
  BigInt big = 0;
  if (fl != 0.0) {
    // 53 bits of mantissa as an integer, then shifted into place.
    const double scaled = std::ldexp(m, 53);
    big = BigInt(static_cast<long long>(scaled));
    if (e >= 53) big <<= (e - 53);
    else big /= (BigInt(1) << (53 - e));  // exact: fl is integral
  }
  const int c = cmp(big, y);
  if (c != 0) return c;
  return x > fl ? 1 : 0;  // floor(x) == y: x > y exactly when x has a fraction
}

}  // namespace

int py_compare(const PyValue& x, const BigInt& y) {
  switch (x.kind) {
    case PyValue::Kind::kNone: return 2;  // None is unordered (TypeError upstream)
    case PyValue::Kind::kBool: return cmp(BigInt(x.b ? 1 : 0), y);
    case PyValue::Kind::kInt: return cmp(x.i, y);
    case PyValue::Kind::kFloat:
      if (std::isnan(x.f)) return 2;
      if (std::isinf(x.f)) return x.f > 0 ? 1 : -1;
      return compare_double_int(x.f, y);
  }
  return 2;
}

bool py_equals_zero(const PyValue& x) { return py_compare(x, BigInt(0)) == 0; }

}  // namespace rpa
