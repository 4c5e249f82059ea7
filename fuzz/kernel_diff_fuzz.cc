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
#include "harness/kernel_diff.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rpa::kernel_diff_or_abort(rpa::kernel_diff_case(data, size));
  return 0;
}
