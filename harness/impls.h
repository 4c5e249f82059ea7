// The implementations `rpa run-case --impl NAME` can run, behind one signature; each registers itself.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "harness/case.h"

namespace rpa {

struct ImplOutput {
  int64_t rows = 0;  // output rows (cu_q_lens[num_seqs])
  int64_t num_q_heads = 0, head_dim = 0;
  std::vector<float> values;             // [rows, num_q_heads, head_dim], values of q's dtype widened
  std::vector<std::string> diagnostics;  // e.g. out-of-range page indices, known divergences
};

struct ImplOptions {
  bool allow_untiled_heads = false;  // fast: accept heads the TPU kernel rejects
  int threads = 0;                   // 0: implementation default
  // Device kind for the kernel entry's block-size table when the case has
  // none (kernel-style implementations only).
  std::string device_kind = "TPU v6 lite";
};

// Runs the case's tensors through an implementation. Throws PyError for
// what the corresponding Python entry raises, CaseError for malformed cases.
using ImplFn = std::function<ImplOutput(const Case&, const ImplOptions&)>;

struct ImplSpec {
  std::string name;  // "oracle", "truth", "truth-exact", "tiled", "fast", ...
  std::string description;
  ImplFn run;
};

// Sorted by name.
std::vector<ImplSpec> implementations();
const ImplSpec* find_implementation(const std::string& name);

// Put one of these at namespace scope in the file that defines an
// implementation (harness/impl_<name>.cc); rpa_harness is an object library,
// so every registration is linked.
struct ImplRegistration {
  ImplRegistration(std::string name, std::string description, ImplFn run);
};

}  // namespace rpa
