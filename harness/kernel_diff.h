// The kernel_diff check: one generated case through the oracle, tiled and fast, judged as `rpa conform` judges it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "harness/case.h"
#include "harness/case_gen.h"

namespace rpa {

// The fuzz target's shapes: small enough for hundreds of cases a second
// under ASan, with partial pages and KV blocks, GQA groups and every dtype.
GenOptions kernel_diff_shapes();

struct DiffFailure {
  std::string impl;    // the implementation that failed
  std::string detail;  // the verdict's reason
};

// The first in-tree implementation (oracle, tiled, fast; one thread each)
// that fails `c` with something other than a known upstream-kernel
// behaviour; nullopt where all pass or the truth rejects the case.
std::optional<DiffFailure> kernel_diff_failure(const Case& c);

// The case the fuzz target builds from its input.
Case kernel_diff_case(const uint8_t* data, size_t size);

}  // namespace rpa
