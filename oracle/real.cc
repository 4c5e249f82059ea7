// Exact conversions between the truth's Real numbers, ExactSum registers and the dtypes.
#include "oracle/real.h"

#include <cmath>
#include <limits>

#include "oracle/exact_round.h"

namespace rpa {
namespace {

// |x| = mant * 2^exp2 + rest with mant's leading bit at 63 and sticky =
// (rest != 0), for finite nonzero x.
void leading_bits(const Real& x, uint64_t& mant, int64_t& exp2, bool& sticky) {
  int e = 0;
  const Real f = boost::multiprecision::frexp(boost::multiprecision::abs(x), &e);  // [0.5, 1)
  const Real scaled = boost::multiprecision::ldexp(f, 64);                          // [2^63, 2^64)
  const Real whole = boost::multiprecision::floor(scaled);
  sticky = whole != scaled;
  mant = whole.convert_to<unsigned long long>();
  exp2 = int64_t(e) - 64;
}

}  // namespace

double round_real_to(DType d, const Real& x) {
  if (boost::multiprecision::isnan(x)) return round_double_to(d, std::numeric_limits<double>::quiet_NaN());
  if (boost::multiprecision::isinf(x))
    return round_double_to(d, x > 0 ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity());
  if (x == 0) return round_double_to(d, boost::multiprecision::signbit(x) ? -0.0 : 0.0);
  uint64_t mant;
  int64_t exp2;
  bool sticky;
  leading_bits(x, mant, exp2, sticky);
  return round_binary(d, x < 0, mant, exp2, sticky);
}

double round_real_to_double(const Real& x) {
  if (boost::multiprecision::isnan(x)) return std::numeric_limits<double>::quiet_NaN();
  if (boost::multiprecision::isinf(x))
    return x > 0 ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
  if (x == 0) return boost::multiprecision::signbit(x) ? -0.0 : 0.0;
  uint64_t mant;
  int64_t exp2;
  bool sticky;
  leading_bits(x, mant, exp2, sticky);
  return round_binary_to_double(x < 0, mant, exp2, sticky);
}

Real to_real(const ExactSum& s) {
  if (s.is_nan()) return std::numeric_limits<Real>::quiet_NaN();
  if (s.is_inf()) return Real(s.to_double());
  uint32_t d[7];
  bool negative, sticky;
  int64_t exp2;
  if (!s.top_digits(d, 7, negative, exp2, sticky)) return Real(0);
  Real r = 0;
  for (int j = 0; j < 7; ++j)
    r += boost::multiprecision::ldexp(Real(d[j]), int(exp2 + 32 * (6 - j)));
  return negative ? Real(-r) : r;
}

}  // namespace rpa
