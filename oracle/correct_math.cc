// Correct rounding of float32 exp and tanh and of double-filtered exact sums.
#include "oracle/correct_math.h"

#include "oracle/exact_round.h"
#include "oracle/real.h"

namespace rpa {
namespace {

constexpr double kLibmRelativeError = 0x1p-48;

// d approximates f(x) within kLibmRelativeError; fallback computes f exactly.
template <typename Exact>
float round_filtered(double d, Exact exact) {
  if (!std::isfinite(d) || d == 0) return static_cast<float>(d);
  const double lo = d - std::fabs(d) * kLibmRelativeError, hi = d + std::fabs(d) * kLibmRelativeError;
  const float a = static_cast<float>(lo), b = static_cast<float>(hi);
  if (a == b) return a;
  return static_cast<float>(round_real_to(DType::kFloat32, exact()));
}

}  // namespace

float exp_f32_correct(float x) {
  if (std::isnan(x)) return x;
  // Beyond these the float32 result is +inf or +0 whatever the rounding.
  if (x > 89.0f) return std::numeric_limits<float>::infinity();
  if (x < -104.0f) return 0.0f;
  return round_filtered(std::exp(double(x)), [x] { return Real(boost::multiprecision::exp(Real(x))); });
}

float tanh_f32_correct(float x) {
  if (std::isnan(x) || x == 0) return x;
  // |tanh(x)| > 1 - 2^-25 for |x| > 9.1: rounds to +-1 (ties impossible).
  if (x > 10.0f) return 1.0f;
  if (x < -10.0f) return -1.0f;
  return round_filtered(std::tanh(double(x)), [x] { return Real(boost::multiprecision::tanh(Real(x))); });
}

bool certain_rounding(DType d, const DoubleSum& s, double& out) {
  if (!std::isfinite(s.sum) || !std::isfinite(s.magnitude)) {
    out = round_double_to(d, s.sum);
    return true;
  }
  if (s.exact) {
    out = round_double_to(d, s.sum);
    return true;
  }
  const double err = double(s.n) * 0x1p-52 * s.magnitude;
  const double widened = err * (1 + 0x1p-50) + std::fabs(s.sum) * 0x1p-52 + 0x1p-1074;
  if (d == DType::kFloat32) {  // the hardware conversion rounds correctly
    const float lo = static_cast<float>(s.sum - widened), hi = static_cast<float>(s.sum + widened);
    if (lo != hi) return false;
    out = lo;
    return true;
  }
  const double lo = round_double_to(d, s.sum - widened), hi = round_double_to(d, s.sum + widened);
  if (lo == hi || (std::isnan(lo) && std::isnan(hi))) {
    out = lo;
    return true;
  }
  return false;
}

double exact_dot(DType d, const double* a, const double* b, int64_t n, int64_t stride, const DoubleSum& filter,
                 bool no_filters, ExactSum& scratch) {
  if (!no_filters && filter.n == n) {
    double out;
    if (certain_rounding(d, filter, out)) return out;
  }
  scratch.clear();
  for (int64_t i = 0; i < n; ++i) scratch.add_product(a[i], b[i * stride]);
  return scratch.round_to(d);
}

}  // namespace rpa
