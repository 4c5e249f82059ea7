// The fast CPU kernel: multi-threaded SIMD flash attention over the paged KV cache, following ref_ragged_paged_attention.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kernels/fast/native_kv.h"
#include "rpa/rpa.h"

namespace rpa::fast {

// Attention of `p` with the KV cache read from `kv` (p.kv_pages is not
// read; kv must have p's page geometry and dtype). Writes
// out[p.num_tokens * p.num_q_heads * p.head_dim]: rows [0, cu_q_lens[num_seqs])
// as the reference concatenates them; later rows are not written. Semantics and the
// ways it differs from the float32 reference are in docs/fast_kernel.md.
// `diagnostics` (optional) receives notes such as clamped page indices.
struct Options {
  // Skip KV blocks masked for every row of a tile where that is provably
  // exact (see plan.h); false visits every key (for tests).
  bool skip_masked_blocks = true;
  // VDPBF16PS (in the bf16 x bf16 tile and the bfloat16-KV decode item's
  // p.v): kAuto where the CPU runs it at least at the float32 FMA's rate
  // (cpu_traits.h), kOn wherever the CPU has it (tests of that path on any
  // such CPU), kOff never (bfloat16 widened to float32, FMAs).
  enum class Bf16Dot { kAuto, kOn, kOff };
  Bf16Dot bf16_dot = Bf16Dot::kAuto;
  // The decode items: for bfloat16, float8_e4m3fn and float8_e5m2 KV
  // (bf16_group-inl.h) where the CPU has AVX512-BF16 and AVX512-VBMI, and
  // for float32, bfloat16 and 8-bit float KV on the AVX2 target
  // (avx2_group-inl.h);
  // false: the generic group item (for tests of it there).
  bool bf16_decode_item = true;
};
rpa_status attention(const rpa_problem& p, const NativeKv& kv, float* out, std::vector<std::string>* diagnostics,
                     const Options& options = {});

// The Highway target the SIMD code runs on ("AVX3", "AVX2", ...).
const char* simd_target();

// The targets this CPU and build can run, best first (simd_target's names).
std::vector<std::string> available_simd_targets();

// Limits the process's Highway dispatch (the fast kernel's and the bench
// ceilings') to the target named, case-insensitively, so that a narrower
// target's code - the AVX2 tiles and decode item - runs on an AVX-512 CPU.
// Call before any kernel runs. Throws std::invalid_argument naming the
// available targets when this CPU or build cannot run it.
void limit_simd_target(std::string_view name);

}  // namespace rpa::fast

extern "C" {
// The C ABI entry (rpa_attention_fn): encodes p.kv_pages to native storage,
// then runs rpa::fast::attention. Rejects (RPA_ERR_REJECTED) head counts the
// reference asserts on; the TPU kernel's tiling limits are the harness's
// concern (see harness/impl_fast.cc).
rpa_status rpa_fast_attention(const rpa_problem* p, float* out);
}
