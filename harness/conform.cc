// The conformance run behind harness/conform.h: generate, run, judge, save reproducers, summarise.
#include "harness/conform.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>

#include "harness/npy.h"
#include "kernels/fast/fast_attention.h"
#include "oracle/py_error.h"

namespace rpa {
namespace {

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, size_t(p * double(v.size() - 1) + 0.5));
  return v[i];
}

// The plain bound's figures (Verdict::plain_share); only for cases whose
// output was judged and not named an upstream-kernel finding (those are
// reported on their own). The worst share is taken over the cases where the
// oracle is within the plain bound: where it is not (float32 overflow,
// ill-conditioned rows) no implementation is expected to be.
void tally_plain(ImplTally& t, const Verdict& v, const std::string& id) {
  if (v.raised || v.kernel_finding) return;
  const bool oracle_within = v.oracle_within_plain();
  if (v.plain_share > 1) {
    ++t.plain_over, t.plain_over_alone += oracle_within;
    t.plain_over_cases.push_back({id, v.plain_share, v.reference_plain_share});
  }
  if (oracle_within && (v.plain_share > t.max_plain_share || t.worst_plain_case.empty()))
    t.max_plain_share = std::max(t.max_plain_share, v.plain_share), t.worst_plain_case = id;
}

// Each case over the plain bound with its share and the oracle's (-1: the
// oracle did not run; JSON has no infinity, so an infinite share is null).
nlohmann::json plain_cases(const ImplTally& t) {
  nlohmann::json a = nlohmann::json::array();
  const auto share = [](double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(); };
  for (const auto& p : t.plain_over_cases)
    a.push_back({{"case", p.id}, {"share", share(p.share)}, {"oracle_share", share(p.oracle_share)}});
  return a;
}

}  // namespace

std::string save_reproducer(const std::string& out_dir, const Case& c, const std::string& impl,
                            const std::string& why) {
  std::filesystem::create_directories(out_dir);
  const std::string path = out_dir + "/" + c.id + "-" + impl + ".json";
  nlohmann::json j = nlohmann::json::parse(write_case(c));
  j["_finding"] = {{"impl", impl}, {"detail", why}};
  write_file_atomic(path, j.dump() + "\n");
  return path;
}

std::optional<std::vector<Verdict>> conform_case(const Case& c, const std::vector<const ImplSpec*>& impls,
                                                 const ImplOptions& options) {
  Truths truths;
  try {
    truths = compute_truths(c, options.threads);
  } catch (const PyError&) {
    return std::nullopt;
  }
  std::optional<ImplOutput> reference;
  try {
    reference = find_implementation("oracle")->run(c, options);
  } catch (const std::exception&) {
  }
  std::vector<Verdict> verdicts;
  for (const ImplSpec* impl : impls) {
    Verdict v;
    try {
      const ImplOutput got = impl->name == "oracle" && reference ? *reference : impl->run(c, options);
      v = judge(c, impl->name, got, truths, reference ? &*reference : nullptr);
    } catch (const std::exception& e) {
      v.ok = false;
      v.raised = true;
      v.detail = std::string("raised where the truth did not: ") + e.what();
    }
    verdicts.push_back(std::move(v));
  }
  return verdicts;
}

ConformReport run_conform(const ConformOptions& o, std::ostream& progress) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  auto last_progress = start;
  ConformReport r;
  std::vector<const ImplSpec*> impls;
  for (const auto& name : o.impls) {
    const ImplSpec* s = find_implementation(name);
    if (!s) throw std::invalid_argument("unknown implementation '" + name + "'");
    impls.push_back(s);
    ImplTally t;
    t.impl = name;
    r.tallies.push_back(std::move(t));
  }
  for (int k = 0; k < o.cases; ++k) {
    if (o.shard_count > 1 && k % o.shard_count != o.shard_index) continue;
    const Case c = random_case(o.seed + uint64_t(k), o.gen);
    ++r.cases;
    const auto verdicts = conform_case(c, impls, o.impl_options);
    if (!verdicts) {
      ++r.truth_rejected;
      continue;
    }
    for (size_t i = 0; i < impls.size(); ++i) {
      ImplTally& t = r.tallies[i];
      const Verdict& v = (*verdicts)[i];
      ++t.run;
      if (v.raised) ++t.errors;
      t.case_max_ulps.push_back(v.max_ulp);
      if (v.bound_share > t.max_bound_share || t.worst_bound_case.empty())
        t.max_bound_share = std::max(t.max_bound_share, v.bound_share), t.worst_bound_case = c.id;
      if (v.max_ulp > t.max_ulp || t.worst_case.empty()) t.max_ulp = std::max(t.max_ulp, v.max_ulp), t.worst_case = c.id;
      tally_plain(t, v, c.id);
      if (v.ok) {
        ++t.passed;
      } else if (v.kernel_finding) {
        ++t.kernel_findings;
        const std::string path = save_reproducer(o.out_dir, c, t.impl, "kernel finding: " + v.detail);
        r.kernel_finding_cases.push_back(path);
        progress << fmt::format("KERNEL FINDING {} {}: {} (saved {})\n", t.impl, c.id, v.detail, path);
      } else {
        ++t.failed;
        const std::string path = save_reproducer(o.out_dir, c, t.impl, v.detail);
        r.reproducers.push_back(path);
        progress << fmt::format("FAIL {} {}: {} (saved {})\n", t.impl, c.id, v.detail, path);
      }
    }
    const auto now = clock::now();
    if (o.progress_seconds > 0 && std::chrono::duration<double>(now - last_progress).count() >= o.progress_seconds) {
      last_progress = now;
      progress << fmt::format("... {} cases, {:.1f}s\n", r.cases, std::chrono::duration<double>(now - start).count());
    }
  }
  r.seconds = std::chrono::duration<double>(clock::now() - start).count();
  return r;
}

std::string format_summary(const ConformReport& r, const ConformOptions& o) {
  std::string s = fmt::format("conform: {} cases (seed {}, shard {}/{}, shapes {}, SIMD {}), {:.1f}s\n", r.cases,
                              o.seed, o.shard_index, o.shard_count, o.gen.name, fast::simd_target(), r.seconds);
  if (r.truth_rejected) s += fmt::format("  {} cases rejected by validation (not run)\n", r.truth_rejected);
  // Each worst figure beside the case it came from: the largest error in
  // ulps and the largest share of the bound are often different cases.
  s += fmt::format("  {:<12} {:>6} {:>7} {:>7} {:>7} {:>8} {:>10} {:<14} {:>10} {:>9} {}\n", "impl", "run", "passed",
                   "failed", "raised", "kernel", "max ulp", "(case)", "p99 ulp", "of bound", "(case)");
  for (const auto& t : r.tallies)
    s += fmt::format("  {:<12} {:>6} {:>7} {:>7} {:>7} {:>8} {:>10.2f} {:<14} {:>10.2f} {:>9.3f} {}\n", t.impl, t.run,
                     t.passed, t.failed, t.errors, t.kernel_findings, t.max_ulp, t.worst_case,
                     percentile(t.case_max_ulps, 0.99), t.max_bound_share, t.worst_bound_case);
  // The literal check (no rounded truth), beside the judged one: where an
  // implementation is over it and the oracle is not, an outside check that
  // applies the bound literally fails that implementation alone.
  s += "  plain bound (exact truth only, as an outside check applies it; reported, not judged):\n";
  for (const auto& t : r.tallies)
    s += fmt::format("  {:<12} over in {:>5} cases, {:>4} with the oracle within it; worst there {:.3f} {}\n", t.impl,
                     t.plain_over, t.plain_over_alone, t.max_plain_share, t.worst_plain_case);
  if (!r.kernel_finding_cases.empty())
    s += fmt::format("  {} upstream-kernel findings (the Pallas schedule's own behaviour, see docs/tiled.md) saved\n",
                     r.kernel_finding_cases.size());
  if (!r.reproducers.empty()) s += fmt::format("  {} reproducers saved under {}/\n", r.reproducers.size(), o.out_dir);
  bool ok = r.reproducers.empty();
  s += ok ? "  result: PASS\n" : "  result: FAIL\n";
  return s;
}

std::string report_json(const ConformReport& r, const ConformOptions& o) {
  nlohmann::json j = {{"cases", r.cases},
                      {"seed", o.seed},
                      {"shard", {o.shard_index, o.shard_count}},
                      {"shapes", o.gen.name},
                      {"simd_target", fast::simd_target()},
                      {"truth_rejected", r.truth_rejected}, {"seconds", r.seconds},
                      {"reproducers", r.reproducers}, {"kernel_findings", r.kernel_finding_cases}};
  for (const auto& t : r.tallies)
    j["impls"].push_back({{"impl", t.impl}, {"run", t.run}, {"passed", t.passed}, {"failed", t.failed},
                          {"raised", t.errors}, {"kernel_findings", t.kernel_findings}, {"max_ulp", t.max_ulp}, {"max_bound_share", t.max_bound_share},
                          {"p99_ulp", percentile(t.case_max_ulps, 0.99)}, {"worst_case", t.worst_case},
                          {"worst_bound_case", t.worst_bound_case}, {"max_plain_share", t.max_plain_share},
                          {"worst_plain_case", t.worst_plain_case}, {"plain_over", t.plain_over},
                          {"plain_over_alone", t.plain_over_alone}, {"plain_over_cases", plain_cases(t)}});
  return j.dump();
}

}  // namespace rpa
