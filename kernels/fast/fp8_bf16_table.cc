#include "kernels/fast/fp8_bf16_table.h"

#include <cmath>
#include <cstdlib>

namespace rpa::fast {
namespace {

Fp8Bf16Table build(DType kv, bool scaled, float scale) {
  Fp8Bf16Table t{};
  for (uint32_t m = 0; m < 128; ++m) {
    const float x = decode(kv, m);
    // float32 product, then the cast to bfloat16 (kernel.py:124-129).
    const float v = scaled ? x * scale : x;
    const uint32_t w = encode(DType::kBFloat16, v);
    // Unscaled, the table is only right if bfloat16 holds the value exactly.
    const float back = decode(DType::kBFloat16, w);
    if (!scaled && !(back == v || (std::isnan(v) && std::isnan(back)))) std::abort();
    t.hi[m] = uint8_t(w >> 8);
    t.lo[m] = uint8_t(w & 0xFF);
  }
  return t;
}

}  // namespace

bool has_fp8_bf16_table(DType kv) { return kv == DType::kFloat8E4M3FN || kv == DType::kFloat8E5M2; }

Fp8Bf16Table fp8_bf16_table(DType kv, bool scaled, float scale) {
  if (!has_fp8_bf16_table(kv)) std::abort();  // callers check has_fp8_bf16_table
  if (scaled) return build(kv, true, scale);
  static const Fp8Bf16Table e4m3fn = build(DType::kFloat8E4M3FN, false, 1.0f);
  static const Fp8Bf16Table e5m2 = build(DType::kFloat8E5M2, false, 1.0f);
  return kv == DType::kFloat8E4M3FN ? e4m3fn : e5m2;
}

}  // namespace rpa::fast
