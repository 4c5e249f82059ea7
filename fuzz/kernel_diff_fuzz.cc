// libFuzzer target: small cases generated from the fuzzer's bytes run through the oracle, tiled and fast, each judged as `rpa conform` judges it.
//
// The input is the generator's choices (random_case_from_bytes), so a
// mutation changes one decision of the case - a dtype, a length, a page, a
// scale - and coverage of the kernels' branches guides the search. A
// failure that is not a known upstream-kernel behaviour is saved as a
// case file under $RPA_FUZZ_OUT (default "kernel-diff-findings") before
// the target aborts, so `rpa run-case FILE --impl IMPL` replays it without
// the fuzzer; the input itself, added to corpus/fuzz/kernel_diff/, becomes
// a regression test (CaseGen.KernelDiffCorpusPasses).
#include <cstdio>
#include <cstdlib>

#include "harness/conform.h"
#include "harness/kernel_diff.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const rpa::Case c = rpa::kernel_diff_case(data, size);
  const auto failure = rpa::kernel_diff_failure(c);
  if (!failure) return 0;
  const char* dir = std::getenv("RPA_FUZZ_OUT");
  const std::string path = rpa::save_reproducer(dir && *dir ? dir : "kernel-diff-findings", c, failure->impl,
                                                failure->detail);
  std::fprintf(stderr, "kernel_diff: %s failed on %s: %s (saved %s)\n", failure->impl.c_str(), c.id.c_str(),
               failure->detail.c_str(), path.c_str());
  std::abort();
}
