// The documented, platform-independent generator behind "data_seed": one seed, the same bits everywhere.
#pragma once

#include <cstdint>
#include <vector>

#include "oracle/dtype.h"

namespace rpa {

// Element i of a seeded tensor of `dtype`:
//   r = splitmix64(seed + (i + 1) * 0x9E3779B97F4A7C15)   (64-bit wraparound)
//   float dtypes: u = (r >> 40) / 2^24 in [0, 1); x = 2u - 1 (exact in float32);
//                 value = round_to(dtype, x)  (float8 included: |x| < 1 is in range)
//   int8: value = (r >> 56) - 128 in [-128, 127];  int4: (r >> 60) - 8 in [-8, 7].
// Only integer arithmetic and exact float32 scaling are used, so the bits
// are the same on every machine and compiler.
uint64_t splitmix64(uint64_t x);
float seeded_value(DType dtype, uint64_t seed, uint64_t index);
std::vector<float> seeded_values(DType dtype, uint64_t seed, int64_t count);

}  // namespace rpa
