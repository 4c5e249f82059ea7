// Correct rounding of exactly known binary values to a dtype: nearest even, subnormals, each format's overflow rule.
#pragma once

#include <cstdint>

#include "oracle/dtype.h"

namespace rpa {

// Rounds (-1)^negative * (mant * 2^exp2 + e) to `d`, where 0 <= e < 2^exp2
// and e != 0 exactly when `sticky`. Float dtypes: round to nearest, ties to
// even, gradual underflow, and overflow (a rounded magnitude above
// max_finite(d)) to +-inf, or NaN for float8_e4m3fn, which has no infinity
// (as encode does). Integer dtypes: XLA's float -> int convert (truncate
// toward zero, saturate). The result is exact in double.
double round_binary(DType d, bool negative, uint64_t mant, int64_t exp2, bool sticky);

// The same rounding to double (53 bits, emin -1022, overflow to +-inf).
double round_binary_to_double(bool negative, uint64_t mant, int64_t exp2, bool sticky);

// x rounded once to d (the same rules; NaN stays NaN, and for integers
// becomes 0; +-inf stays, or becomes NaN for e4m3fn, or saturates for ints).
// For d = float32 this is static_cast<float>(x).
double round_double_to(DType d, double x);

// The smallest normal exponent of a float dtype (2^emin is its smallest
// normal value): -126 for float32 and bfloat16, -14 for float16 and e5m2,
// -6 for e4m3fn.
int min_normal_exponent(DType d);

// The spacing of d's values at magnitude |x|: 2^(max(floor(log2|x|), emin) -
// mantissa_bits) for floats (|x| above max_finite uses max_finite's), 1 for
// integers.
double ulp_at(DType d, double x);

}  // namespace rpa
