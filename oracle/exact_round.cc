// Correct rounding of exactly known values to the computable dtypes, shared by the truth and the tolerance model.
#include "oracle/exact_round.h"

#include <bit>
#include <cmath>
#include <limits>

namespace rpa {
namespace {

double overflow_value(DType d) {
  return d == DType::kFloat8E4M3FN ? std::numeric_limits<double>::quiet_NaN()
                                   : std::numeric_limits<double>::infinity();
}

double round_to_int(DType d, bool negative, uint64_t mant, int64_t exp2) {
  const int bits = dtype_bits(d);
  const double hi = std::ldexp(1.0, bits - 1) - 1, lo = -std::ldexp(1.0, bits - 1);
  double t;  // trunc(|value|), saturated well above any integer dtype's range
  if (mant == 0) {
    t = 0;
  } else if (exp2 >= 0) {
    t = (exp2 > 62 || (mant >> (63 - exp2)) != 0) ? 1e30 : double(mant << exp2);
  } else {
    t = exp2 <= -64 ? 0.0 : double(mant >> -exp2);
  }
  double v = negative ? -t : t;
  if (v > hi) v = hi;
  if (v < lo) v = lo;
  return v + 0.0;  // an integer result has no signed zero
}

}  // namespace

int min_normal_exponent(DType d) {
  // The value with exponent field 1 and mantissa 0.
  return std::ilogb(decode(d, uint32_t{1} << mantissa_bits(d)));
}

namespace {

// Round (-1)^negative * (mant * 2^exp2 + sticky) to precision p with
// smallest normal exponent emin; magnitudes above max_value overflow.
double round_generic(int p, int64_t emin, double max_value, double overflow, bool negative, uint64_t mant,
                     int64_t exp2, bool sticky) {
  const double sign = negative ? -1.0 : 1.0;
  if (mant == 0) return sign * 0.0;  // callers pass sticky only with mant != 0
  const int lz = std::countl_zero(mant);
  mant <<= lz;
  exp2 -= lz;
  const int64_t top = exp2 + 63;  // exponent of the leading bit
  const int64_t quantum = (top > emin ? top : emin) - (p - 1);
  const int64_t drop = quantum - exp2;  // >= 64 - p > 0
  uint64_t kept;
  bool round_bit, rest;
  if (drop >= 65) {
    kept = 0, round_bit = false, rest = true;
  } else if (drop == 64) {
    kept = 0, round_bit = (mant >> 63) & 1u, rest = (mant << 1) != 0 || sticky;
  } else {
    kept = mant >> drop;
    round_bit = (mant >> (drop - 1)) & 1u;
    rest = (drop >= 2 && (mant << (65 - drop)) != 0) || sticky;
  }
  if (round_bit && (rest || (kept & 1u))) ++kept;
  if (quantum > 2000) return sign * overflow;
  if (quantum < -2000) return sign * 0.0;  // only reached with kept == 0
  const double magnitude = std::ldexp(double(kept), int(quantum));
  if (magnitude > max_value) return sign * overflow;
  return sign * magnitude;
}

}  // namespace

double round_binary(DType d, bool negative, uint64_t mant, int64_t exp2, bool sticky) {
  if (dtype_info(d).kind != DTypeKind::kFloat) return round_to_int(d, negative, mant, exp2);
  return round_generic(mantissa_bits(d) + 1, min_normal_exponent(d), max_finite(d), overflow_value(d), negative,
                       mant, exp2, sticky);
}

double round_binary_to_double(bool negative, uint64_t mant, int64_t exp2, bool sticky) {
  return round_generic(53, -1022, std::numeric_limits<double>::max(), std::numeric_limits<double>::infinity(),
                       negative, mant, exp2, sticky);
}

double round_double_to(DType d, double x) {
  const bool is_float = dtype_info(d).kind == DTypeKind::kFloat;
  if (std::isnan(x)) return is_float ? x : 0.0;
  if (std::isinf(x)) {
    if (!is_float) return x > 0 ? max_finite(d) : -max_finite(d) - 1;
    return d == DType::kFloat8E4M3FN ? std::numeric_limits<double>::quiet_NaN() : x;
  }
  if (x == 0) return is_float ? x : 0.0;
  int e;
  const double f = std::frexp(std::fabs(x), &e);  // |x| = f * 2^e, f in [0.5, 1)
  const auto mant = static_cast<uint64_t>(std::ldexp(f, 53));
  return round_binary(d, std::signbit(x), mant, e - 53, false);
}

double ulp_at(DType d, double x) {
  if (dtype_info(d).kind != DTypeKind::kFloat) return 1.0;
  double a = std::fabs(x);
  if (!(a <= max_finite(d))) a = max_finite(d);  // beyond range, or NaN
  int e = a == 0 ? min_normal_exponent(d) : std::ilogb(a);
  if (e < min_normal_exponent(d)) e = min_normal_exponent(d);
  return std::ldexp(1.0, e - mantissa_bits(d));
}

}  // namespace rpa
