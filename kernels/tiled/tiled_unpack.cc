// The strided K/V load from packed words, including the bfloat16 shift-and-mask path.
#include "kernels/tiled/tiled_unpack.h"

#include <bit>

namespace rpa::tiled {

void strided_load_kv(const uint32_t* words, const Geometry& g, const KvCodec& codec, int64_t start, int64_t step,
                     float* const* k_out, float* const* v_out) {
  const int64_t packing = g.kv_packing, d = g.head_dim, n = g.num_kv_per_blk;
  if (packing == 1) {
    // ref[start::step, :] and ref[start + 1::step, :].
    for (int64_t t = 0; t < n; ++t) {
      const uint32_t* kr = words + (start + t * step) * d;
      const uint32_t* vr = words + (start + 1 + t * step) * d;
      for (int64_t c = 0; c < d; ++c) {
        k_out[0][t * d + c] = std::bit_cast<float>(kr[c]);
        v_out[0][t * d + c] = std::bit_cast<float>(vr[c]);
      }
    }
    return;
  }
  const int64_t b_start = start / packing, b_step = step / packing;
  if (codec.dtype() == DType::kBFloat16) {
    for (int64_t t = 0; t < n; ++t) {
      const uint32_t* b = words + (b_start + t * b_step) * d;
      for (int64_t c = 0; c < d; ++c) {
        k_out[0][t * d + c] = std::bit_cast<float>(b[c] << 16);
        v_out[0][t * d + c] = std::bit_cast<float>(b[c] & 0xFFFF0000u);
      }
    }
    return;
  }
  const int bitwidth = int(32 / packing);
  const uint32_t mask = (1u << bitwidth) - 1u;
  for (int64_t i = 0, j = 0; i < packing; i += 2, ++j) {
    const int ks = int(i) * bitwidth, vs = int(i + 1) * bitwidth;
    for (int64_t t = 0; t < n; ++t) {
      const uint32_t* b = words + (b_start + t * b_step) * d;
      float* kr = k_out[j] + t * d;
      float* vr = v_out[j] + t * d;
      for (int64_t c = 0; c < d; ++c) {
        kr[c] = codec.decode((b[c] >> ks) & mask);
        vr[c] = codec.decode((b[c] >> vs) & mask);
      }
    }
  }
}

}  // namespace rpa::tiled
