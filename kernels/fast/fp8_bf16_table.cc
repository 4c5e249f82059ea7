#include "kernels/fast/fp8_bf16_table.h"

#include <cmath>
#include <cstdlib>

namespace rpa::fast {
namespace {

Fp8Bf16Table build(DType kv) {
  Fp8Bf16Table t{};
  for (uint32_t m = 0; m < 128; ++m) {
    const float v = decode(kv, m);
    const uint32_t w = encode(DType::kBFloat16, v);
    // The table is only right if bfloat16 holds the value exactly.
    if (!(decode(DType::kBFloat16, w) == v || (std::isnan(v) && std::isnan(decode(DType::kBFloat16, w)))))
      std::abort();
    t.hi[m] = uint8_t(w >> 8);
    t.lo[m] = uint8_t(w & 0xFF);
  }
  return t;
}

}  // namespace

bool has_fp8_bf16_table(DType kv) { return kv == DType::kFloat8E4M3FN || kv == DType::kFloat8E5M2; }

const Fp8Bf16Table& fp8_bf16_table(DType kv) {
  static const Fp8Bf16Table e4m3fn = build(DType::kFloat8E4M3FN);
  static const Fp8Bf16Table e5m2 = build(DType::kFloat8E5M2);
  if (kv == DType::kFloat8E4M3FN) return e4m3fn;
  if (kv == DType::kFloat8E5M2) return e5m2;
  std::abort();  // callers check has_fp8_bf16_table
}

}  // namespace rpa::fast
