// `rpa run-case CASE.json --impl NAME --out OUT.npy`: runs one case's tensors through an implementation, writes the output.
#include <cstdio>
#include <memory>
#include <string>

#include "harness/case.h"
#include "harness/cli/verb.h"
#include "harness/impls.h"
#include "harness/npy.h"
#include "oracle/py_error.h"

namespace rpa::cli {
namespace {

struct Options {
  std::string case_path, impl, out, device_kind;
  bool allow_untiled_heads = false;
  int threads = 0;
};

std::string known_implementations() {
  std::string s;
  for (const ImplSpec& spec : implementations()) s += (s.empty() ? "" : ", ") + spec.name;
  return s;
}

int run(const Options& opt) {
  const ImplSpec* impl = find_implementation(opt.impl);
  if (impl == nullptr) {
    std::fprintf(stderr, "rpa: unknown implementation '%s' (known: %s)\n", opt.impl.c_str(),
                 known_implementations().c_str());
    return kExitBadInput;
  }
  const std::vector<Case> cases = read_cases(opt.case_path);
  if (cases.size() != 1) {
    std::fprintf(stderr, "rpa: %s: expected exactly one case, found %zu\n", opt.case_path.c_str(), cases.size());
    return kExitBadInput;
  }
  const Case& c = cases[0];
  ImplOptions options;
  options.allow_untiled_heads = opt.allow_untiled_heads;
  options.threads = opt.threads;
  if (!opt.device_kind.empty()) options.device_kind = opt.device_kind;
  ImplOutput out;
  try {
    out = impl->run(c, options);
  } catch (const PyError& e) {
    // What the Python entry raises: its class and str(e), as a traceback's last line.
    std::fprintf(stderr, "%s: %s\n", e.cls().c_str(), e.message().c_str());
    return kExitFindings;
  }
  for (const std::string& line : out.diagnostics) std::fprintf(stderr, "rpa: note: %s\n", line.c_str());
  const int64_t shape[3] = {out.rows, out.num_q_heads, out.head_dim};
  if (static_cast<int64_t>(out.values.size()) != out.rows * out.num_q_heads * out.head_dim) {
    std::fprintf(stderr, "rpa: implementation '%s' returned %zu values for shape [%lld, %lld, %lld]\n",
                 opt.impl.c_str(), out.values.size(), static_cast<long long>(out.rows),
                 static_cast<long long>(out.num_q_heads), static_cast<long long>(out.head_dim));
    return kExitBadInput;
  }
  write_npy_f32(opt.out, shape, out.values);
  return kExitOk;
}

const VerbRegistration kRegistration{
    "run-case",
    "Run one case's tensors through an implementation and write its output as a float32 .npy of shape "
    "[rows, Hq, D] (values of the output dtype widened exactly). A Python exception prints 'Class: message' "
    "and exits 1",
    [](CLI::App& sub) -> std::function<int()> {
      auto opt = std::make_shared<Options>();
      sub.add_option("case", opt->case_path, "the case (.json, one object; - reads stdin)")->required();
      sub.add_option("--impl", opt->impl, "implementation: oracle, truth, truth-exact, tiled, fast, ...")
          ->required();
      sub.add_option("--out", opt->out, "output .npy (written atomically)")->required();
      sub.add_option("--device-kind", opt->device_kind,
                     "device kind for kernel-style implementations when the case has none");
      sub.add_flag("--allow-untiled-heads", opt->allow_untiled_heads,
                   "let implementations that can run head counts the TPU kernel rejects do so");
      sub.add_option("--threads", opt->threads, "threads the implementation may use (0: its default)")
          ->check(CLI::NonNegativeNumber);
      return [opt] { return run(*opt); };
    }};

}  // namespace
}  // namespace rpa::cli
