// The rpa command line: dispatches to the verbs registered under harness/cli/.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>

#include "harness/case.h"
#include "harness/cli/verb.h"
#include "kernels/fast/fast_attention.h"

namespace rpa::cli {
std::vector<VerbSpec>& verb_registry() {
  static std::vector<VerbSpec> verbs;
  return verbs;
}
}  // namespace rpa::cli

int main(int argc, char** argv) {
  using namespace rpa::cli;
  CLI::App app{"rpa: conformance and fuzzing harness for ragged paged attention kernels"};
  app.set_version_flag("--version", std::string("rpa ") + RPA_VERSION);
  app.require_subcommand(1);
  // Before or after the verb (fallthrough): rpa --simd avx2 conform, rpa conform --simd avx2.
  app.fallthrough();
  std::string simd;
  app.add_option("--simd", simd,
                 "Run the SIMD code on this Highway target (AVX2, AVX3, ...: see the error for this CPU's) instead "
                 "of the best one, so that a narrower target's paths are checked on a wider CPU");
  auto& verbs = verb_registry();
  std::sort(verbs.begin(), verbs.end(), [](const VerbSpec& a, const VerbSpec& b) { return a.name < b.name; });
  std::vector<std::pair<CLI::App*, std::function<int()>>> runners;
  for (auto& v : verbs) {
    CLI::App* sub = app.add_subcommand(v.name, v.description);
    runners.emplace_back(sub, v.setup(*sub));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : kExitBadInput;
  }
  try {
    if (!simd.empty()) {
      rpa::fast::limit_simd_target(simd);
      std::fprintf(stderr, "rpa: SIMD code limited to %s\n", rpa::fast::simd_target());
    }
    for (auto& [sub, run] : runners)
      if (sub->parsed()) return run();
  } catch (const rpa::CaseError& e) {
    std::fprintf(stderr, "rpa: %s\n", e.what());
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rpa: error: %s\n", e.what());
    return kExitBadInput;
  }
  return kExitBadInput;
}
