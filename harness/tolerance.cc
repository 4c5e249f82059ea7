// Error measurement in ulps and the acceptance bounds of the tolerance model (derivations in docs/tolerance.md).
#include "harness/tolerance.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "oracle/exact_round.h"

namespace rpa {
namespace {

bool is_int(DType d) { return dtype_info(d).kind != DTypeKind::kFloat; }

template <typename T>
ErrorSummary summarize(std::span<const T> actual, std::span<const double> truth, DType judge,
                       std::span<const double> bound, std::span<const double> reference) {
  ErrorSummary s;
  const size_t n = std::min(actual.size(), truth.size());
  s.elements = static_cast<int64_t>(n);
  std::vector<double> ulps;
  ulps.reserve(n);
  double sum = 0;
  auto mismatch = [&](size_t i) {
    if (s.first_mismatch < 0) s.first_mismatch = static_cast<int64_t>(i);
  };
  for (size_t i = 0; i < n; ++i) {
    const double a = static_cast<double>(actual[i]), t = truth[i];
    if (!std::isfinite(a) && i < reference.size() && !std::isfinite(reference[i]) && a != t &&
        !(std::isnan(a) && std::isnan(t))) {
      ++s.reference_nonfinite;
      continue;
    }
    if (std::isnan(a) || std::isnan(t)) {
      if (std::isnan(a) != std::isnan(t)) ++s.nan_mismatches, mismatch(i);
      continue;
    }
    if (std::isinf(a) || std::isinf(t)) {
      if (a != t) ++s.inf_mismatches, mismatch(i);
      continue;
    }
    ++s.finite;
    const double err = std::fabs(a - t), u = error_ulps(judge, a, t);
    ulps.push_back(u);
    sum += u;
    if (u > s.max_ulps || s.worst < 0) s.max_ulps = std::max(s.max_ulps, u), s.worst = static_cast<int64_t>(i);
    s.max_abs = std::max(s.max_abs, err);
    if (!bound.empty()) {
      const double b = bound[i];
      if (err > b) ++s.over_bound;
      s.max_bound_ratio = std::max(s.max_bound_ratio, b > 0 ? err / b : (err > 0 ? INFINITY : 0.0));
    }
  }
  if (!ulps.empty()) {
    s.mean_ulps = sum / static_cast<double>(ulps.size());
    const size_t k = static_cast<size_t>(std::floor(0.99 * static_cast<double>(ulps.size() - 1)));
    std::nth_element(ulps.begin(), ulps.begin() + static_cast<std::ptrdiff_t>(k), ulps.end());
    s.p99_ulps = ulps[k];
  }
  s.pass = s.nan_mismatches == 0 && s.inf_mismatches == 0 && s.over_bound == 0;
  return s;
}

}  // namespace

DType judging_dtype(DType q, DType kv, bool has_v_scale) {
  const DType v = has_v_scale ? q : kv;
  if (is_int(v)) return v;
  if (is_int(q)) return q;
  return unit_roundoff(v) > unit_roundoff(q) ? v : q;
}

double path_unit_roundoff(DType q, DType kv, bool has_k_scale, bool has_v_scale) {
  const DType k = has_k_scale ? q : kv, v = has_v_scale ? q : kv;
  if (is_int(v)) return 0.5;
  return std::max({unit_roundoff(q), unit_roundoff(k), unit_roundoff(v), unit_roundoff(DType::kFloat32)});
}

double error_ulps(DType judge, double actual, double truth) {
  return std::fabs(actual - truth) / ulp_at(judge, truth);
}

double float32_floor(std::span<const double> truth) {
  double m = 0;
  for (double t : truth)
    if (std::isfinite(t)) m = std::max(m, std::fabs(t));
  return kFloat32Tolerance * (1 + m);
}

std::vector<double> reference_bound(DType judge, std::span<const double> truth, std::span<const double> widen) {
  std::vector<double> b(truth.size());
  const double floor32 = float32_floor(truth);
  for (size_t i = 0; i < truth.size(); ++i) {
    const double w = i < widen.size() ? widen[i] : 0.0;
    if (judge == DType::kFloat32) {
      b[i] = floor32 + w;
    } else {
      const double ulp = ulp_at(judge, truth[i]);
      b[i] = (w > 0 ? 2 * ulp : ulp) + w;
    }
  }
  return b;
}

std::vector<double> kernel_bound(double u, std::span<const double> truth, std::span<const double> v_abs_max) {
  std::vector<double> b(truth.size());
  const double floor32 = float32_floor(truth);
  for (size_t i = 0; i < truth.size(); ++i) {
    const double vmax = i < v_abs_max.size() ? v_abs_max[i] : 0.0;
    const double t = std::isfinite(truth[i]) ? std::fabs(truth[i]) : 0.0;
    b[i] = 2 * u * (vmax + t) + floor32;
  }
  return b;
}

ErrorSummary summarize_errors(std::span<const float> actual, std::span<const double> truth, DType judge,
                              std::span<const double> bound, std::span<const double> reference) {
  return summarize(actual, truth, judge, bound, reference);
}
ErrorSummary summarize_errors(std::span<const double> actual, std::span<const double> truth, DType judge,
                              std::span<const double> bound, std::span<const double> reference) {
  return summarize(actual, truth, judge, bound, reference);
}

std::vector<double> kernel_judging_truth(std::span<const double> actual, std::span<const double> exact,
                                         std::span<const double> rounded, std::span<const char> scores_off_exact,
                                         std::span<const double> exact_bound, int64_t* from_rounded) {
  std::vector<double> t(exact.begin(), exact.end());
  int64_t n = 0;
  for (size_t i = 0; i < t.size() && i < rounded.size() && i < actual.size(); ++i) {
    const bool off = i < scores_off_exact.size() && scores_off_exact[i];
    // False where either truth is NaN: those are judged as NaN positions.
    const bool reference_beyond =
        i < exact_bound.size() && std::fabs(rounded[i] - exact[i]) > kReferenceOffShare * exact_bound[i];
    if (off && std::isnan(actual[i]))
      t[i] = actual[i], ++n;
    else if ((off || reference_beyond) && std::fabs(actual[i] - rounded[i]) < std::fabs(actual[i] - exact[i]))
      t[i] = rounded[i], ++n;
  }
  if (from_rounded) *from_rounded = n;
  return t;
}

KernelJudgement kernel_judgement(double u, std::span<const double> actual, std::span<const double> exact,
                                 std::span<const double> rounded, std::span<const char> scores_off_exact,
                                 std::span<const double> v_abs_max) {
  KernelJudgement k;
  k.truth = kernel_judging_truth(actual, exact, rounded, scores_off_exact, kernel_bound(u, exact, v_abs_max),
                                 &k.from_rounded);
  k.bound = kernel_bound(u, k.truth, v_abs_max);
  return k;
}

double plain_bound_share(double u, std::span<const double> actual, std::span<const double> exact,
                         std::span<const double> v_abs_max) {
  const std::vector<double> bound = kernel_bound(u, exact, v_abs_max);
  double worst = 0;
  for (size_t i = 0; i < exact.size() && i < actual.size(); ++i) {
    const double a = actual[i], t = exact[i];
    if (std::isfinite(a) && std::isfinite(t)) {
      worst = std::max(worst, std::fabs(a - t) / bound[i]);
    } else {
      const bool same = (std::isnan(a) && std::isnan(t)) || a == t;  // two NaNs, or the same infinity
      if (!same) return std::numeric_limits<double>::infinity();
    }
  }
  return worst;
}

bool far_worse_than_reference(const ErrorSummary& impl, const ErrorSummary& reference) {
  const int64_t impl_mismatches = impl.nan_mismatches + impl.inf_mismatches;
  const int64_t ref_mismatches = reference.nan_mismatches + reference.inf_mismatches;
  if (impl_mismatches > ref_mismatches) return true;
  // With bounds, compare in units of each element's bound: ulps at the truth
  // explode where an output crosses zero (cancellation in p.v), which says
  // nothing about the implementation.
  if (impl.max_bound_ratio > 0 || reference.max_bound_ratio > 0)
    return impl.max_bound_ratio > std::max(kFarWorseFactor * reference.max_bound_ratio, kFarWorseFloorRatio);
  return impl.max_ulps > std::max(kFarWorseFactor * reference.max_ulps, kFarWorseFloorUlps);
}

std::string summary_json(const ErrorSummary& s, DType judge) {
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                "{\"dtype\": \"%s\", \"elements\": %lld, \"finite\": %lld, \"nan_mismatches\": %lld, "
                "\"inf_mismatches\": %lld, \"over_bound\": %lld, \"max_ulps\": %.6g, \"p99_ulps\": %.6g, "
                "\"mean_ulps\": %.6g, \"max_abs\": %.6g, \"max_bound_ratio\": %.6g, \"worst\": %lld, "
                "\"first_mismatch\": %lld, \"reference_nonfinite\": %lld, \"pass\": %s}",
                std::string(dtype_name(judge)).c_str(), static_cast<long long>(s.elements),
                static_cast<long long>(s.finite), static_cast<long long>(s.nan_mismatches),
                static_cast<long long>(s.inf_mismatches), static_cast<long long>(s.over_bound), s.max_ulps,
                s.p99_ulps, s.mean_ulps, s.max_abs, std::isinf(s.max_bound_ratio) ? 1e308 : s.max_bound_ratio,
                static_cast<long long>(s.worst), static_cast<long long>(s.first_mismatch),
                static_cast<long long>(s.reference_nonfinite), s.pass ? "true" : "false");
  return buf;
}

std::string summary_text(const ErrorSummary& s, DType judge) {
  const std::string extra =
      s.reference_nonfinite > 0
          ? "; " + std::to_string(s.reference_nonfinite) + " NaN/Inf where the reference's float32 is NaN/Inf"
          : "";
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                "%lld elements (%lld finite), errors in %s ulps: max %.4g (at %lld), p99 %.4g, mean %.4g; "
                "max |error| %.4g; NaN mismatches %lld, Inf mismatches %lld; over bound %lld (max error/bound "
                "%.4g)%s: %s",
                static_cast<long long>(s.elements), static_cast<long long>(s.finite),
                std::string(dtype_name(judge)).c_str(), s.max_ulps, static_cast<long long>(s.worst), s.p99_ulps,
                s.mean_ulps, s.max_abs, static_cast<long long>(s.nan_mismatches),
                static_cast<long long>(s.inf_mismatches), static_cast<long long>(s.over_bound), s.max_bound_ratio,
                extra.c_str(), s.pass ? "PASS" : "FAIL");
  return buf;
}

}  // namespace rpa
