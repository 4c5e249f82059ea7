// The seeded tensor generator documented in harness/data_seed.h.
#include "harness/data_seed.h"

namespace rpa {

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

float seeded_value(DType dtype, uint64_t seed, uint64_t index) {
  const uint64_t r = splitmix64(seed + (index + 1) * 0x9E3779B97F4A7C15ull);
  switch (dtype) {
    case DType::kInt8: return float(int(r >> 56) - 128);
    case DType::kInt4: return float(int(r >> 60) - 8);
    default: {
      // (r >> 40) < 2^24, so u and 2u - 1 are exact in float32.
      const float u = float(r >> 40) * (1.0f / 16777216.0f);
      return round_to(dtype, 2.0f * u - 1.0f);
    }
  }
}

std::vector<float> seeded_values(DType dtype, uint64_t seed, int64_t count) {
  std::vector<float> v(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) v[i] = seeded_value(dtype, seed, uint64_t(i));
  return v;
}

}  // namespace rpa
