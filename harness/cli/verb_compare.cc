// `rpa compare ACTUAL.npy TRUTH.npy --dtype DT`: per-element errors in ulps against the truth, summary, exit 1 beyond the bound.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "harness/case.h"
#include "harness/cli/verb.h"
#include "harness/npy.h"
#include "harness/tolerance.h"
#include "oracle/truth.h"

namespace rpa::cli {
namespace {

struct Options {
  std::string actual, truth, dtype, case_path, bound = "reference";
  bool json = false;
};

// A float32 or float64 .npy as doubles.
std::vector<double> load(const std::string& path, std::vector<int64_t>& shape) {
  const NpyArray a = read_npy(path);
  shape = a.shape;
  std::vector<double> out;
  if (a.descr == "<f8") {
    out.resize(a.bytes.size() / 8);
    std::memcpy(out.data(), a.bytes.data(), out.size() * 8);
  } else if (a.descr == "<f4") {
    const std::vector<float> v = npy_to_values(a, DType::kFloat32, path);
    out.assign(v.begin(), v.end());
  } else {
    throw CaseError(path + ": expected a float32 or float64 array, found dtype '" + a.descr + "'");
  }
  return out;
}

int run(const Options& opt) {
  const auto judge = dtype_from_name(opt.dtype);
  if (!judge || !dtype_info(*judge).computable) {
    std::fprintf(stderr, "rpa: --dtype '%s' is not a q/KV dtype (float32, bfloat16, float16, float8_e4m3fn, "
                 "float8_e5m2, int8, int4)\n", opt.dtype.c_str());
    return kExitBadInput;
  }
  std::vector<int64_t> shape_a, shape_b;
  const std::vector<double> actual = load(opt.actual, shape_a);
  std::vector<double> truth = load(opt.truth, shape_b);
  if (shape_a != shape_b) {
    std::fprintf(stderr, "rpa: %s and %s have different shapes\n", opt.actual.c_str(), opt.truth.c_str());
    return kExitBadInput;
  }
  // Without a case: one ulp of DT (float32: 1e-5 * (1 + max |truth|)). With
  // one, the case's truth supplies what the bound needs: each element's
  // probability widening (reference bound) or max |V| over its keys
  // (kernel bound).
  std::vector<double> bound, reference_points;
  if (opt.case_path.empty()) {
    bound = reference_bound(*judge, truth, {});
  } else {
    const std::vector<Case> cases = read_cases(opt.case_path);
    if (cases.size() != 1) {
      std::fprintf(stderr, "rpa: %s: expected exactly one case, found %zu\n", opt.case_path.c_str(), cases.size());
      return kExitBadInput;
    }
    const Case& c = cases[0];
    TruthOutput t;
    try {
      t = truth_ragged_paged_attention(c.call, materialise_q(c), materialise_kv(c));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "rpa: %s: the truth cannot run this case: %s\n", opt.case_path.c_str(), e.what());
      return kExitBadInput;
    }
    if (t.values.size() != truth.size()) {
      std::fprintf(stderr, "rpa: %s: the case's output has %zu elements, %s %zu\n", opt.case_path.c_str(),
                   t.values.size(), opt.truth.c_str(), truth.size());
      return kExitBadInput;
    }
    const double u = path_unit_roundoff(c.call.q.dtype, c.call.kv_pages.dtype, !c.call.k_scale.is_none(),
                                        !c.call.v_scale.is_none());
    if (opt.bound == "plain") {
      // The kernel bound applied literally at TRUTH (the exact truth, as
      // run-case --impl truth-exact writes it): no rounded truth, no
      // non-finite output accepted - an outside check's reading.
      bound = kernel_bound(u, truth, t.v_abs_max);
    } else if (opt.bound == "kernel") {
      KernelJudgement k = kernel_judgement(u, actual, truth, t.values, t.scores_off_exact, t.v_abs_max);
      if (k.from_rounded > 0)
        std::fprintf(stderr,
                     "rpa: note: %lld elements judged against the reference's own float32 result, where its q.k "
                     "overflowed float32, its scores passed 2^24 or float32's range, or it is itself beyond the "
                     "kernel bound (docs/tolerance.md, \"Reference overflow\", \"Ill-conditioned rows\")\n",
                     static_cast<long long>(k.from_rounded));
      truth = std::move(k.truth);
      bound = std::move(k.bound);
      reference_points = std::move(t.values);  // the rounded truth: where the reference itself overflows
    } else {
      bound = reference_bound(*judge, truth, t.widen);
    }
  }
  const ErrorSummary s = summarize_errors(actual, truth, *judge, bound, reference_points);
  const std::string text = opt.json ? summary_json(s, *judge) : summary_text(s, *judge);
  std::printf("%s\n", text.c_str());
  return s.pass ? kExitOk : kExitFindings;
}

const VerbRegistration kRegistration{
    "compare",
    "Compare ACTUAL.npy with TRUTH.npy element by element (TRUTH is the reference or truth output: errors are "
    "measured at its values, in ulps of --dtype); print max / p99 / mean errors and NaN/Inf mismatches; exit 1 "
    "beyond the bound of docs/tolerance.md",
    [](CLI::App& sub) -> std::function<int()> {
      auto opt = std::make_shared<Options>();
      sub.add_option("actual", opt->actual, "the output under test (.npy, float32 or float64)")->required();
      sub.add_option("truth", opt->truth, "the truth or reference output (.npy, float32 or float64)")->required();
      sub.add_option("--dtype", opt->dtype, "dtype whose ulps measure the error (the coarser of q's and V's)")
          ->required();
      sub.add_flag("--json", opt->json, "print the summary as one JSON object");
      sub.add_option("--case", opt->case_path,
                     "the case both outputs come from: enables the conditioning-aware bounds");
      sub.add_option("--bound", opt->bound,
                     "with --case: 'reference' (default), 'kernel' (as conform judges a kernel), or 'plain' (the "
                     "kernel bound at TRUTH with none of the judge's allowances for the reference's own float32 "
                     "behaviour: TRUTH from run-case --impl truth-exact)")
          ->check(CLI::IsMember({"reference", "kernel", "plain"}));
      return [opt] { return run(*opt); };
    }};

}  // namespace
}  // namespace rpa::cli
