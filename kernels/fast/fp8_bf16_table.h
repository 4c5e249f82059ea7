// The bfloat16 bit pattern of every 8-bit float KV value (dequantised where the scale allows), for the decode item's byte lookups (VPERMT2B).
#pragma once

#include <cstdint>

#include "oracle/dtype.h"

namespace rpa::fast {

// Every float8_e4m3fn and float8_e5m2 value is a bfloat16 value (3 or 2
// mantissa bits, exponents within bfloat16's normal range), so the decode
// item reads 8-bit KV as bfloat16 words looked up byte by byte: `hi` and
// `lo` hold the high and low byte of the word of magnitude m (the byte
// without its sign bit, 0..127). The byte's sign bit flips the word's
// (XOR), which holds for these two formats, whose byte b | 0x80 is the
// negation of b (NaN included), and for a scaled table too, as rounding
// to nearest even is symmetric: round(-x * s) = -round(x * s).
struct Fp8Bf16Table {
  alignas(64) uint8_t hi[128];
  alignas(64) uint8_t lo[128];
};

// Whether `kv` is read through the table: float8_e4m3fn and float8_e5m2.
bool has_fp8_bf16_table(DType kv);

// Whether a k_scale / v_scale can be folded into the table: the reference
// dequantises to q's dtype (x.astype(f32) * scale, then .astype(q.dtype):
// kernel.py:124-129), a bfloat16 value only where q is bfloat16.
inline bool fp8_scale_in_table(DType q) { return q == DType::kBFloat16; }

// The table of `kv` (has_fp8_bf16_table): its values (built once from the
// dtype model, decode then encode as bfloat16, checked exact), or with
// `scaled` (fp8_scale_in_table), each value times `scale` in float32 then
// rounded to bfloat16 as the reference dequantises - Inf where that
// overflows, NaN from NaN. Built per call when scaled (256 entries).
Fp8Bf16Table fp8_bf16_table(DType kv, bool scaled = false, float scale = 1.0f);

}  // namespace rpa::fast
