// `rpa conform`: the main job (a seeded conformance run of the in-tree implementations with a summary).
#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "harness/cli/verb.h"
#include "harness/conform.h"
#include "harness/npy.h"

namespace rpa::cli {
namespace {

struct Args {
  ConformOptions o;
  std::string shard = "0/1";
  std::string impls = "oracle,tiled,fast";
  std::string json_out;
  std::string shapes = "small";
};

int run(Args& a) {
  if (auto slash = a.shard.find('/'); slash != std::string::npos) {
    a.o.shard_index = std::stoi(a.shard.substr(0, slash));
    a.o.shard_count = std::stoi(a.shard.substr(slash + 1));
  }
  if (a.o.shard_count < 1 || a.o.shard_index < 0 || a.o.shard_index >= a.o.shard_count) {
    std::cerr << "rpa conform: --shard must be i/N with 0 <= i < N\n";
    return kExitBadInput;
  }
  a.o.impls.clear();
  for (size_t s = 0; s <= a.impls.size();) {
    size_t e = a.impls.find(',', s);
    if (e == std::string::npos) e = a.impls.size();
    if (e > s) a.o.impls.push_back(a.impls.substr(s, e - s));
    s = e + 1;
  }
  for (const auto& name : a.o.impls)
    if (!find_implementation(name)) {
      std::cerr << "rpa conform: unknown implementation '" << name << "' (see rpa run-case --help)\n";
      return kExitBadInput;
    }
  a.o.gen = gen_shapes(a.shapes);  // the name is checked by CLI11
  ConformReport r = run_conform(a.o, std::cerr);
  std::cout << format_summary(r, a.o);
  if (!a.json_out.empty()) write_file_atomic(a.json_out, report_json(r, a.o) + "\n");
  return r.reproducers.empty() ? kExitOk : kExitFindings;
}

VerbRegistration reg{
    "conform",
    "Run seeded random cases through the in-tree implementations and judge them against the high-precision truth",
    [](CLI::App& sub) -> std::function<int()> {
      auto a = std::make_shared<Args>();
      sub.add_option("--seed", a->o.seed, "Seed of the first case (case k uses seed + k)")->capture_default_str();
      sub.add_option("--cases", a->o.cases, "Number of cases")->capture_default_str()->check(CLI::NonNegativeNumber);
      sub.add_option("--shard", a->shard, "Run only cases k with k % N == i (i/N)")->capture_default_str();
      sub.add_option("--impls", a->impls, "Comma-separated implementations to judge")->capture_default_str();
      sub.add_option("--shapes", a->shapes,
                     "Case shapes: small (head_dim 1-16, short sequences) or large (head_dim 32-256 as the fast "
                     "kernel's vector paths take it, sequences up to 200 keys; slower)")
          ->capture_default_str()
          ->check(CLI::IsMember(gen_shape_names()));
      sub.add_option("--out-dir", a->o.out_dir, "Where reproducers of failures are saved")->capture_default_str();
      sub.add_option("--json", a->json_out, "Also write the report as JSON to this file");
      sub.add_option("--threads", a->o.impl_options.threads, "Threads for multi-threaded implementations (0: all)");
      sub.add_option("--progress", a->o.progress_seconds, "Seconds between progress lines (0: none)")
          ->capture_default_str();
      return [a] { return run(*a); };
    }};

}  // namespace
}  // namespace rpa::cli
