// libFuzzer target: every float32 rounds to each dtype idempotently, monotonically and within half an ulp.
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "oracle/dtype.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 8) return 0;
  uint32_t a_bits, b_bits;
  std::memcpy(&a_bits, data, 4);
  std::memcpy(&b_bits, data + 4, 4);
  float a = std::bit_cast<float>(a_bits), b = std::bit_cast<float>(b_bits);
  if (a > b) std::swap(a, b);
  for (rpa::DType d : rpa::computable_dtypes()) {
    const float ra = rpa::round_to(d, a), rb = rpa::round_to(d, b);
    if (std::isnan(a)) {
      if (rpa::dtype_info(d).kind == rpa::DTypeKind::kFloat && !std::isnan(ra)) std::abort();
      continue;
    }
    // Idempotent: a rounded value is a value of the dtype.
    if (!std::isnan(ra) && rpa::round_to(d, ra) != ra) std::abort();
    // Monotone where a <= b are ordered (NaN -> 0 for integers is not).
    if (!std::isnan(b) && !std::isnan(ra) && !std::isnan(rb) && ra > rb) std::abort();
    // Nearest: within half an ulp of the dtype for in-range normal floats.
    if (rpa::dtype_info(d).kind == rpa::DTypeKind::kFloat && std::isfinite(ra) && std::fabs(a) >= 0.02f &&  // above every smallest normal
        std::fabs(a) <= rpa::max_finite(d)) {
      const double ulp = std::ldexp(1.0, std::ilogb(a) - rpa::mantissa_bits(d));
      if (std::fabs(double(ra) - double(a)) > ulp / 2) std::abort();
    }
  }
  return 0;
}
