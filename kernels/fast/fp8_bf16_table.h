// The bfloat16 bit pattern of every 8-bit float KV value, for the decode item's byte lookups (VPERMT2B).
#pragma once

#include <cstdint>

#include "oracle/dtype.h"

namespace rpa::fast {

// Every float8_e4m3fn and float8_e5m2 value is a bfloat16 value (3 or 2
// mantissa bits, exponents within bfloat16's normal range), so the decode
// item reads 8-bit KV as bfloat16 words looked up byte by byte: `hi` and
// `lo` hold the high and low byte of the word of magnitude m (the byte
// without its sign bit, 0..127). The sign bit carries over unchanged (the
// high bit of the word), which holds for these two formats, whose byte
// b | 0x80 is the negation of b (NaN included).
struct Fp8Bf16Table {
  alignas(64) uint8_t hi[128];
  alignas(64) uint8_t lo[128];
};

// Whether `kv` is read through the table: float8_e4m3fn and float8_e5m2.
bool has_fp8_bf16_table(DType kv);

// The table of `kv` (has_fp8_bf16_table), built once from the dtype model
// (decode, then encode as bfloat16, which is exact for these values).
const Fp8Bf16Table& fp8_bf16_table(DType kv);

}  // namespace rpa::fast
