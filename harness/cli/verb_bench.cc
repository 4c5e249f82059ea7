// `rpa bench [--json] [--quick] [--repeats N] [--threads N] [--shape S] [--impl I] [--q-dtype D] [--kv-dtype D]`: times the implementations on the upstream shapes (docs/bench.md).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "harness/bench_suite.h"
#include "harness/cli/verb.h"

namespace rpa::cli {
namespace {

struct Options {
  bool json = false;
  bool quick = false;
  int repeats = 0;
  int threads = 0;
  std::vector<std::string> shapes, impls, q_dtypes, kv_dtypes;
};

int run(const Options& opt) {
  BenchOptions b;
  b.quick = opt.quick;
  b.repeats = opt.repeats;
  b.threads = opt.threads;
  b.shapes = opt.shapes;
  b.impls = opt.impls;
  b.q_dtypes = opt.q_dtypes;
  b.kv_dtypes = opt.kv_dtypes;
  if (!opt.json) {
    b.progress = [](const std::string& line) {
      std::fputs(line.c_str(), stdout);
      std::fflush(stdout);
    };
  }
  const BenchReport r = run_bench(b);
  if (opt.json) {
    std::fputs(bench_json(r).c_str(), stdout);
    for (const auto& n : r.notes) std::fprintf(stderr, "rpa bench: %s\n", n.c_str());
  } else {
    if (r.ceilings_rose) std::printf("fractions of the larger ceilings (read after the rows):\n%s", bench_table(r).c_str());
    std::printf("ceilings: %.1f GFLOP/s FMA, %.1f GB/s stream, %d threads\n", r.ceilings.fma_gflops,
                r.ceilings.stream_gbs, r.ceilings.threads);
    for (const auto& n : r.notes) std::printf("note: %s\n", n.c_str());
  }
  return kExitOk;
}

const VerbRegistration kRegistration{
    "bench",
    "Time the reference, tiled and fast implementations on the upstream decode / prefill / mixed shapes, "
    "with the machine's FMA and stream ceilings measured in the same run",
    [](CLI::App& sub) -> std::function<int()> {
      auto opt = std::make_shared<Options>();
      sub.add_flag("--json", opt->json, "print one JSON object: {\"ceilings\": {...}, \"rows\": [...]}");
      sub.add_flag("--quick", opt->quick, "fewer repeats; reference and tiled rows on the mixed shape only");
      sub.add_option("--repeats", opt->repeats, "timed calls per fast row (default 21, 15 with --quick)")
          ->check(CLI::Range(1, 1000));
      sub.add_option("--threads", opt->threads, "threads (default: every hardware thread)")->check(CLI::Range(1, 1024));
      // Filters (repeatable or comma-separated); a row is run when it matches every given one.
      const auto filter = [&sub](const char* flag, std::vector<std::string>& into, const std::vector<std::string>& values,
                                 const char* what) {
        std::string names;
        for (const auto& v : values) names += (names.empty() ? "" : ", ") + v;
        sub.add_option(flag, into, std::string("only these ") + what + " (" + names + ")")
            ->delimiter(',')
            ->check(CLI::IsMember(values));
      };
      filter("--shape", opt->shapes, bench_shapes(), "shapes");
      filter("--impl", opt->impls, bench_impls(), "implementations");
      filter("--q-dtype", opt->q_dtypes, bench_q_dtypes(), "q dtypes");
      filter("--kv-dtype", opt->kv_dtypes, bench_kv_dtypes(), "KV dtypes");
      return [opt] { return run(*opt); };
    }};

}  // namespace
}  // namespace rpa::cli
