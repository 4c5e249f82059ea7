// The high-precision number type of the truth (Boost.Multiprecision, 50 decimal digits) and its exact conversions.
#pragma once

#include <boost/multiprecision/cpp_bin_float.hpp>

#include "oracle/dtype.h"
#include "oracle/exact_sum.h"

namespace rpa {

// 50 decimal digits: a 168-bit binary significand and an exponent range far
// beyond any double's, with IEEE-style NaN and infinities.
using Real = boost::multiprecision::cpp_bin_float_50;

// x rounded once to d with round_binary's rules (NaN, infinities and the
// integer dtypes as round_double_to handles them).
double round_real_to(DType d, const Real& x);
// x rounded once to double (nearest, ties to even).
double round_real_to_double(const Real& x);

// An ExactSum's value to Real's precision (its leading 224 bits, then one
// rounding of Real's own): exact for sums that fit 168 bits.
Real to_real(const ExactSum& s);

// A double (exactly) as a Real.
inline Real to_real(double x) { return Real(x); }

}  // namespace rpa
