// Running one case's entry point through the validation mirror to an outcome line (DESIGN.md "An outcome").
#pragma once

#include <optional>
#include <string>

#include "harness/case.h"
#include "oracle/validate.h"

namespace rpa {

struct Outcome {
  std::string id;
  bool ok = false;
  std::string error;    // Python exception class when !ok
  std::string message;  // exactly str(e)
  std::optional<KernelEntry> kernel;  // entry "kernel", on success
};

// Runs what the case's entry runs up to the point where Python would have
// raised or finished validating: static / dynamic validation, the kernel
// preamble (head blocking, block sizes), or the reference's checks and the
// errors its loop raises (oracle/reference_plan.h).
// `default_device_kind` stands in for jax.devices()[0].device_kind when the
// case has no "device_kind". Throws CaseError when the case lacks data the
// entry reads once it gets that far (kv_lens, cu_q_lens and num_seqs for
// dynamic after static validation passed; index data for reference).
Outcome run_outcome(const Case& c, const std::string& default_device_kind);

// One JSON line, no newline: {"id":...,"ok":true,...} or
// {"id":...,"error":"ValueError","message":"..."}. Block sizes print as
// Python's json.dumps would print the values Python holds (ints of any
// size, floats by repr, bools as true/false).
std::string outcome_json(const Outcome& o);

}  // namespace rpa
