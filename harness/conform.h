// The main job: seeded random cases through every in-tree implementation, judged against the truth.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "harness/case_gen.h"
#include "harness/impls.h"
#include "oracle/truth.h"

namespace rpa {

struct ConformOptions {
  uint64_t seed = 1;  // case k of the run uses seed + k
  int cases = 300;
  int shard_index = 0, shard_count = 1;  // this process runs k with k % count == index
  std::vector<std::string> impls = {"oracle", "tiled", "fast"};
  std::string out_dir = "conform-out";  // reproducers of failures, one case file each
  double progress_seconds = 5.0;        // a progress line at most this often (0: never)
  GenOptions gen;
  ImplOptions impl_options;
};

// One implementation's verdict on one case.
struct Verdict {
  bool ok = true;
  double max_ulp = 0, p99_ulp = 0;  // error in ulps of the output dtype
  double bound_share = 0;           // max |error| / bound: 1 is the edge of acceptance
  // plain_bound_share against the exact truth (no rounded truth): an outside
  // certifier's literal check; and the oracle's own on the same case, where
  // it ran (-1: not known). Reported, not judged.
  double plain_share = 0, reference_plain_share = -1;
  // The oracle's output is known and within the plain bound on this case.
  bool oracle_within_plain() const { return reference_plain_share >= 0 && reference_plain_share <= 1; }
  std::string detail;               // why it failed, or a known divergence
  // The failure comes with a diagnostic naming a behaviour of the upstream
  // kernel itself (schedule.* bugs the tiled emulation reproduces,
  // known-divergence.*): reported and saved, but not a failure of the port.
  bool kernel_finding = false;
  bool raised = false;  // threw where the truth did not
};

// True when an implementation's diagnostics name an upstream-kernel
// behaviour rather than an implementation error.
bool names_kernel_finding(const std::vector<std::string>& diagnostics);

struct ImplTally {
  std::string impl;
  int run = 0, passed = 0, failed = 0, errors = 0;  // errors: threw where the truth did not
  int kernel_findings = 0;                           // diverged with an upstream-kernel diagnostic
  double max_ulp = 0, max_bound_share = 0;
  std::vector<double> case_max_ulps;  // per case, for percentiles
  std::string worst_case;             // id of the case with max_ulp
  std::string worst_bound_case;       // id of the case with max_bound_share (ulps explode near zero; this does not)
  // The plain bound (Verdict::plain_share): cases beyond it, and of those
  // the ones where the oracle's own output is within it (where a literal
  // check fails this implementation but not the reference); the largest
  // share over the cases where the oracle is within it.
  int plain_over = 0, plain_over_alone = 0;
  struct PlainOver {
    std::string id;
    double share = 0, oracle_share = -1;  // Verdict::plain_share, reference_plain_share
  };
  std::vector<PlainOver> plain_over_cases;
  double max_plain_share = 0;
  std::string worst_plain_case;
};

struct ConformReport {
  int cases = 0;
  int truth_rejected = 0;  // cases the truth itself rejected (validation)
  std::vector<ImplTally> tallies;
  std::vector<std::string> reproducers;  // paths written, one per failing case
  std::vector<std::string> kernel_finding_cases;  // paths of cases showing upstream-kernel behaviour
  double seconds = 0;
};

// The two truths of a case (oracle/truth.h): the reference is judged against
// the rounded one with the reference bound, every other implementation
// against the exact one with the kernel bound (docs/tolerance.md).
struct Truths {
  TruthOutput rounded, exact;
};
Truths compute_truths(const Case& c, int threads);

// Judges implementation `impl`'s output (harness/conform_judge.cc). When
// `reference` is given (the oracle's output on the same case), an
// implementation far worse than it fails too.
Verdict judge(const Case& c, const std::string& impl, const ImplOutput& got, const Truths& truths,
              const ImplOutput* reference = nullptr);

// One case through `impls`, each judged as run_conform judges it (against
// the truths, and against the oracle's output where it ran); nullopt where
// the truth rejects the case (validation), which is then not run. What
// the conform run and the kernel_diff fuzz target share.
std::optional<std::vector<Verdict>> conform_case(const Case& c, const std::vector<const ImplSpec*>& impls,
                                                 const ImplOptions& options);

// Writes case `c` with a "_finding" note (impl, why) to
// out_dir/<id>-<impl>.json, atomically, before anything reports it, so no
// failure is lost. Returns the path.
std::string save_reproducer(const std::string& out_dir, const Case& c, const std::string& impl,
                            const std::string& why);

ConformReport run_conform(const ConformOptions& o, std::ostream& progress);
std::string format_summary(const ConformReport& r, const ConformOptions& o);
std::string report_json(const ConformReport& r, const ConformOptions& o);

}  // namespace rpa
