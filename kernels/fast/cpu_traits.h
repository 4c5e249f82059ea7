// What the fast kernel asks of the CPU beyond the SIMD target: whether its bfloat16 dot-product instruction pays.
#pragma once

namespace rpa::fast {

// True where the CPU has AVX512-BF16 and its VDPBF16PS (32 products per
// instruction) retires at least as many products per cycle as float32 FMAs
// (16 a lane-full instruction). So on AMD Zen 4 and Zen 5; not on Intel's
// Cooper Lake to Emerald Rapids, where it issues at about half the FMA's
// rate (measured 0.45 instructions a cycle against 2 FMAs on a Xeon of
// family 6, model 207): there, bfloat16 widened to float32 and FMAs are
// twice as fast. Decided by vendor rather than timed, so the kernel's
// results on one machine do not depend on its load.
bool bf16_dot_is_fast();

// True where the CPU has the instruction at all.
bool has_bf16_dot();

// True where the CPU has AVX512-VBMI (VPERMT2B, the byte lookup that reads
// 8-bit float KV as bfloat16 words in the decode item). Every CPU with
// AVX512-BF16 has it but Intel's Cooper Lake.
bool has_byte_permute();

}  // namespace rpa::fast
