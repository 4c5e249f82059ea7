// libFuzzer target: kernel_diff on head_dims the fast kernel's vector paths take (32 to 136) instead of 1 to 16.
//
// The same check and the same kind of input as kernel_diff_fuzz.cc (the
// generator's choices), with kernel_diff_large_shapes: the AVX-512 decode
// item (head_dim % 64 == 0, bfloat16 or 8-bit float KV), the AVX2 item and
// the tiles' whole vectors run here, under the fuzz build's sanitizers.
// Corpus: corpus/fuzz/kernel_diff_large/, replayed by
// CaseGen.KernelDiffLargeCorpusPasses.
#include "harness/kernel_diff.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rpa::kernel_diff_or_abort(rpa::kernel_diff_large_case(data, size));
  return 0;
}
