// KvCodec: table decode and exact-value encode of the KV dtype.
#include "kernels/tiled/tiled_codec.h"

#include <bit>
#include <cmath>

namespace rpa::tiled {
namespace {
constexpr uint32_t kNotHandled = 0xFFFFFFFFu;
}

KvCodec::KvCodec(DType d) : d_(d), bits_(dtype_bits(d)) {
  if (bits_ < 32) {
    table_.resize(size_t{1} << bits_);
    for (uint32_t b = 0; b < table_.size(); ++b) table_[b] = rpa::decode(d, b);
  }
  if (dtype_info(d).kind == DTypeKind::kFloat && bits_ < 32) {
    man_bits_ = mantissa_bits(d);
    exp_bits_ = bits_ - 1 - man_bits_;
    bias_ = (1 << (exp_bits_ - 1)) - 1;
  }
}

float KvCodec::decode(uint32_t bits) const {
  if (table_.empty()) return std::bit_cast<float>(bits);
  return table_[bits & (uint32_t(table_.size()) - 1u)];
}

// Builds the fields of a float32 value that the target format holds exactly;
// anything else (NaN, inf, values needing rounding) is left to rpa::encode.
uint32_t KvCodec::encode_exact_float(float x) const {
  const uint32_t fb = std::bit_cast<uint32_t>(x);
  const uint32_t sign = (fb >> 31) << (bits_ - 1);
  const int e = int((fb >> 23) & 0xFFu);
  const uint32_t m = fb & 0x7FFFFFu;
  if (e == 0xFF) return kNotHandled;
  if (e == 0) return m == 0 ? sign : kNotHandled;
  const int unbiased = e - 127;
  const int emin = 1 - bias_;
  const int drop = 23 - man_bits_;
  uint32_t code;
  if (unbiased >= emin) {
    const int te = unbiased + bias_;
    if (te >= (1 << exp_bits_) || (m & ((1u << drop) - 1u)) != 0) return kNotHandled;
    code = sign | (uint32_t(te) << man_bits_) | (m >> drop);
  } else {
    const int shift = drop + (emin - unbiased);
    if (shift >= 32) return kNotHandled;
    const uint32_t full = 0x800000u | m;
    if ((full & ((1u << shift) - 1u)) != 0) return kNotHandled;
    code = sign | (full >> shift);
  }
  return std::bit_cast<uint32_t>(table_[code]) == fb ? code : kNotHandled;
}

uint32_t KvCodec::encode(float x) const {
  if (table_.empty()) return std::bit_cast<uint32_t>(x);
  if (dtype_info(d_).kind == DTypeKind::kFloat) {
    const uint32_t c = encode_exact_float(x);
    if (c != kNotHandled) return c;
  } else if (std::isfinite(x) && x == std::trunc(x) && std::fabs(x) <= 128.0f) {
    const uint32_t c = uint32_t(int32_t(x)) & (uint32_t(table_.size()) - 1u);
    if (table_[c] == x) return c;
  }
  return rpa::encode(d_, x);
}

}  // namespace rpa::tiled
