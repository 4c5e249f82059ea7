// Judging one implementation's output on one case against the truths, with the tolerance model.
#include <fmt/format.h>

#include <cmath>
#include <utility>

#include "harness/conform.h"
#include "harness/tolerance.h"

namespace rpa {

Truths compute_truths(const Case& c, int threads) {
  const std::vector<float> q = materialise_q(c), kv = materialise_kv(c);
  Truths t;
  TruthOptions o;
  o.threads = threads > 0 ? threads : 1;
  o.mode = TruthMode::kRounded;
  t.rounded = truth_ragged_paged_attention(c.call, q, kv, o);
  o.mode = TruthMode::kExact;
  o.widen_window_ulps = 0;
  t.exact = truth_ragged_paged_attention(c.call, q, kv, o);
  return t;
}

bool names_kernel_finding(const std::vector<std::string>& diagnostics) {
  for (const auto& d : diagnostics)
    if (d.starts_with("schedule.") || d.starts_with("known-divergence.")) return true;
  return false;
}

Verdict judge(const Case& c, const std::string& impl, const ImplOutput& got, const Truths& truths,
              const ImplOutput* reference) {
  Verdict v;
  const CallArgs& a = c.call;
  const DType judge_dtype = judging_dtype(a.q.dtype, a.kv_pages.dtype, !a.v_scale.is_none());
  const bool is_reference = impl == "oracle";
  const TruthOutput& truth = is_reference ? truths.rounded : truths.exact;
  const double u = path_unit_roundoff(a.q.dtype, a.kv_pages.dtype, !a.k_scale.is_none(), !a.v_scale.is_none());
  if (got.rows != truth.rows || got.values.size() != truth.values.size()) {
    v.ok = false;
    v.detail = fmt::format("output has {} rows, the truth {}", got.rows, truth.rows);
    return v;
  }
  // The reference is held to its own rounding points; everything else to
  // the kernel bound against the exact truth (docs/tolerance.md), or the
  // rounded one where the reference itself is off the exact truth.
  std::vector<double> target, bound;
  const std::vector<double> got_d(got.values.begin(), got.values.end());
  if (is_reference) {
    target = truth.values;
    bound = reference_bound(judge_dtype, target, truths.rounded.widen);
  } else {
    KernelJudgement k = kernel_judgement(u, got_d, truth.values, truths.rounded.values,
                                         truths.rounded.scores_off_exact, truth.v_abs_max);
    target = std::move(k.truth);
    bound = std::move(k.bound);
  }
  const auto plain = [&](std::span<const double> out) {
    return plain_bound_share(u, out, truths.exact.values, truths.exact.v_abs_max);
  };
  v.plain_share = plain(got_d);
  if (is_reference) {
    v.reference_plain_share = v.plain_share;
  } else if (reference && reference->values.size() == got.values.size()) {
    const std::vector<double> ref_d(reference->values.begin(), reference->values.end());
    v.reference_plain_share = plain(ref_d);
  }
  // Where the reference's own float32 math is NaN or Inf, a kernel's NaN or
  // Inf is accepted too (docs/tolerance.md, "Reference overflow").
  const std::span<const double> ref_points = is_reference ? std::span<const double>() : truths.rounded.values;
  const ErrorSummary s = summarize_errors(got.values, target, judge_dtype, bound, ref_points);
  v.max_ulp = s.max_ulps;
  v.p99_ulp = s.p99_ulps;
  v.bound_share = s.max_bound_ratio;
  if (!s.pass) {
    v.ok = false;
    v.kernel_finding = names_kernel_finding(got.diagnostics);
    v.detail = fmt::format("{} of {} elements beyond the bound, {} NaN and {} Inf position mismatches, max {:.2f} ulp "
                           "of {} (worst element {})",
                           s.over_bound, s.elements, s.nan_mismatches, s.inf_mismatches, s.max_ulps,
                           dtype_name(judge_dtype), s.worst);
    return v;
  }
  if (reference && !is_reference && reference->values.size() == got.values.size()) {
    const ErrorSummary ref = summarize_errors(reference->values, truth.values, judge_dtype, bound, ref_points);
    // Compared over the elements where the reference has a value: where it
    // is NaN or Inf (its float32 overflow) and the implementation finite,
    // the reference's error is not 0, it is unmeasurable (fuzz finding: the
    // fast kernel's exact answer under sm_scale 1e37, half an ulp from the
    // truth, was "far worse" than an all-NaN reference).
    // Copied and summarised again only where that changes an element (the
    // reference is almost always finite everywhere, and then `s` is that
    // summary).
    std::vector<float> comparable;  // empty: no element changed
    for (size_t i = 0; i < got.values.size(); ++i) {
      const float r = reference->values[i], x = got.values[i];
      if (std::isfinite(r) || (std::isnan(r) && std::isnan(x)) || r == x) continue;
      if (comparable.empty()) comparable = got.values;
      comparable[i] = r;
    }
    const ErrorSummary cmp =
        comparable.empty() ? s : summarize_errors(comparable, target, judge_dtype, bound, ref_points);
    if (far_worse_than_reference(cmp, ref)) {
      v.ok = false;
      v.kernel_finding = names_kernel_finding(got.diagnostics);
      v.detail = fmt::format("within the bound but far worse than the reference: max {:.2f} ulp vs {:.2f}",
                             cmp.max_ulps, ref.max_ulps);
    }
  }
  return v;
}

}  // namespace rpa
