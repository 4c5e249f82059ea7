// Correctly rounded float32 exp and tanh, and the double-precision filter that rounds exact sums without exact arithmetic.
#pragma once

#include <cmath>
#include <cstdint>

#include "oracle/dtype.h"
#include "oracle/exact_sum.h"

namespace rpa {

// exp(x) and tanh(x) of a float32 x, rounded once to float32 (nearest even).
// The double result of the C library is trusted to 2^-48 relative error (16
// double ulps; glibc documents at most 1 ulp for exp and 2 for tanh on
// x86_64): when both ends of that interval round to the same float32 the
// exact value rounds there too (rounding is monotone); otherwise the value
// is recomputed in 50-digit arithmetic (oracle/real.h) and rounded.
float exp_f32_correct(float x);
float tanh_f32_correct(float x);

// The recursive double sum of n terms that are each exact doubles, with the
// sum of their magnitudes, to decide the rounding of the exact sum.
struct DoubleSum {
  double sum = 0, magnitude = 0;
  int64_t n = 0;
  // False once some addition rounded (Knuth's TwoSum error term nonzero);
  // while true, `sum` is the exact sum.
  bool exact = true;
  void add(double t) {
    const double s = sum + t, bp = s - sum, err = (sum - (s - bp)) + (t - bp);
    exact = exact && err == 0;
    sum = s;
    magnitude += std::fabs(t);
    ++n;
  }
};

// The same bound holds for any order of summation (Higham (4.3): a
// summation tree of height h has gamma_h <= gamma_{n-1}), so callers may
// keep several partial sums and add them up at the end.
inline DoubleSum merge(const DoubleSum& a, const DoubleSum& b) {
  DoubleSum r = a;
  r.add(b.sum);
  r.magnitude = a.magnitude + b.magnitude;
  r.n = a.n + b.n;
  r.exact = r.exact && b.exact;
  return r;
}

// Sets `out` to the exact sum rounded once to d and returns true when the
// double sum's error bound proves the rounding; false when the exact sum
// must be formed (ExactSum) to decide.
//
// Proof of the bound: recursive summation of n exact terms satisfies
// |fl(s) - s| <= gamma_{n-1} * sum|t_i| with gamma_k = k u / (1 - k u),
// u = 2^-53 (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed.,
// (4.4)); the computed magnitude M satisfies sum|t_i| <= M / (1 - gamma_{n-1}).
// For n < 2^40 both factors together stay below 2 n u, so
// |fl(s) - s| <= n * 2^-52 * M. Terms here are products of two values of the
// computable dtypes (at most 48 significant bits, exponents within
// [-298, 256]), so no term or partial sum overflows and additions of such
// multiples of 2^-298 never lose bits to underflow, keeping the model valid.
// The interval ends are widened by 2^-52 |fl(s)| + 2^-50 err so that their own
// rounding cannot move them inward. NaN and infinite sums are IEEE's and are
// returned as they are. A sum whose every addition was exact (TwoSum, see
// DoubleSum::exact) is rounded directly.
bool certain_rounding(DType d, const DoubleSum& s, double& out);

// sum_i a[i] * b[i * stride] rounded once to d, exactly: `filter` (its
// double sum, or a bound of its magnitude; filter.n != n: none) where
// certain_rounding settles it, else every product summed exactly in
// `scratch`. no_filters: always the exact sum (tests of the filter).
double exact_dot(DType d, const double* a, const double* b, int64_t n, int64_t stride, const DoubleSum& filter,
                 bool no_filters, ExactSum& scratch);

}  // namespace rpa
