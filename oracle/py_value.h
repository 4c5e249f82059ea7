// A Python scalar keyword argument (None, bool, int of any size, float) and how Python prints it.
#pragma once

#include <boost/multiprecision/cpp_int.hpp>
#include <string>

namespace rpa {

using BigInt = boost::multiprecision::cpp_int;

struct PyValue {
  enum class Kind { kNone, kBool, kInt, kFloat };
  Kind kind = Kind::kNone;
  bool b = false;
  BigInt i = 0;
  double f = 0.0;

  static PyValue none() { return {}; }
  static PyValue boolean(bool v) { PyValue p; p.kind = Kind::kBool; p.b = v; return p; }
  static PyValue integer(BigInt v) { PyValue p; p.kind = Kind::kInt; p.i = std::move(v); return p; }
  static PyValue floating(double v) { PyValue p; p.kind = Kind::kFloat; p.f = v; return p; }

  bool is_none() const { return kind == Kind::kNone; }
  bool is_float() const { return kind == Kind::kFloat; }  // isinstance(x, float)
  // The value as a Python float would see it (bool and int converted).
  double as_double() const;
};

// repr(x) as Python 3.11 prints it: None, True, 12, 0.0, -1.5, 1e-05, 1e+16.
std::string py_repr(const PyValue& v);
// repr(float): shortest round-trip digits, fixed notation for 1e-4 <= |x| < 1e16.
std::string py_float_repr(double x);

// Python's comparison of x with an int (bools and ints exact; floats compared
// exactly against the integer, as CPython's float/int comparison does).
// Returns -1, 0, 1, or 2 when unordered (NaN).
int py_compare(const PyValue& x, const BigInt& y);
// x == 0.0 in Python.
bool py_equals_zero(const PyValue& x);

}  // namespace rpa
