// `rpa gen-case`: the case file `rpa conform` generates for one seed, so a passing case can be rerun and inspected too.
#include <iostream>
#include <memory>

#include "harness/case.h"
#include "harness/case_gen.h"
#include "harness/cli/verb.h"
#include "harness/npy.h"

namespace rpa::cli {
namespace {

struct Args {
  uint64_t seed = 1;
  std::string shapes = "small";
  std::string out;
};

int run(const Args& a) {
  const Case c = random_case(a.seed, gen_shapes(a.shapes));
  const std::string text = write_case(c);
  if (a.out.empty()) {
    std::cout << text << "\n";
  } else {
    write_file_atomic(a.out, text + "\n");
    std::cerr << "rpa gen-case: " << c.id << " written to " << a.out << "\n";
  }
  return kExitOk;
}

VerbRegistration reg{
    "gen-case",
    "Write the case that `rpa conform --seed N --cases 1` runs (id gen-N, or gen-large-N with --shapes large) as a "
    "case file, for run-case or a port",
    [](CLI::App& sub) -> std::function<int()> {
      auto a = std::make_shared<Args>();
      sub.add_option("--seed", a->seed, "The case's seed (conform's case k of --seed S has seed S + k)")
          ->capture_default_str();
      sub.add_option("--shapes", a->shapes, "Case shapes, as rpa conform takes them")
          ->capture_default_str()
          ->check(CLI::IsMember(gen_shape_names()));
      sub.add_option("--out", a->out, "Write the case here (atomically) instead of to stdout");
      return [a] { return run(*a); };
    }};

}  // namespace
}  // namespace rpa::cli
