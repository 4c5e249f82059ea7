// `rpa check-errors CASES.jsonl [--out OUT.jsonl] [--device-kind K]`: the validation mirror's outcome for every case.
#include <cstdio>
#include <memory>
#include <string>

#include "harness/case.h"
#include "harness/cli/verb.h"
#include "harness/npy.h"
#include "harness/outcome.h"

namespace rpa::cli {
namespace {

struct Options {
  std::string cases;
  std::string out;
  std::string device_kind = "cpu";
};

int run(const Options& opt) {
  // Everything is computed before anything is written, so a malformed case
  // (CaseError, exit 2) leaves no partial output.
  const std::vector<Case> cases = read_cases(opt.cases);
  std::string text;
  text.reserve(cases.size() * 96);
  for (const Case& c : cases) {
    text += outcome_json(run_outcome(c, opt.device_kind));
    text += '\n';
  }
  if (opt.out.empty()) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  } else {
    write_file_atomic(opt.out, text);
  }
  return kExitOk;
}

const VerbRegistration kRegistration{
    "check-errors",
    "Run each case's entry through the validation mirror: one outcome line per case (ok, or the Python "
    "exception class and exact message)",
    [](CLI::App& sub) -> std::function<int()> {
      auto opt = std::make_shared<Options>();
      sub.add_option("cases", opt->cases, "cases file (.json or .jsonl; - reads stdin)")->required();
      sub.add_option("--out", opt->out, "write the outcomes here (atomically) instead of stdout");
      sub.add_option("--device-kind", opt->device_kind,
                     "jax.devices()[0].device_kind for cases without \"device_kind\" (default: cpu)");
      return [opt] { return run(*opt); };
    }};

}  // namespace
}  // namespace rpa::cli
