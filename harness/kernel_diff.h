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
// behaviour, or the fast kernel over the plain bound where the oracle is
// within it (Verdict::plain_share); nullopt where all pass or the truth
// rejects the case.
std::optional<DiffFailure> kernel_diff_failure(const Case& c);

// The case the fuzz target builds from its input.
Case kernel_diff_case(const uint8_t* data, size_t size);

// The kernel_diff_large target's shapes and case: head_dims the fast
// kernel's vector paths take (multiples of 16 and 64, and 136), which
// kernel_diff's 1 to 16 never reach, and KV lengths over several of its
// key blocks. A separate target, so kernel_diff's corpus keeps its meaning.
GenOptions kernel_diff_large_shapes();
Case kernel_diff_large_case(const uint8_t* data, size_t size);

// A fuzz target's body: runs kernel_diff_failure on `c`; on a failure, saves
// the case file under $RPA_FUZZ_OUT (default "kernel-diff-findings"),
// reports it on stderr, and aborts (libFuzzer then saves the input).
void kernel_diff_or_abort(const Case& c);

}  // namespace rpa
