// strided_load_kv (kernel.py:361-393): K and V of a KV-head chunk taken out of the packed 32-bit words of a VMEM buffer.
#pragma once

#include <cstdint>

#include "kernels/tiled/tiled_codec.h"
#include "kernels/tiled/tiled_geometry.h"

namespace rpa::tiled {

// kv_load_step = max(1, packing // 2) (kernel.py:622): how many KV heads one
// strided load yields.
inline int64_t kv_load_step(const Geometry& g) { return g.kv_packing / 2 > 1 ? g.kv_packing / 2 : 1; }

// The buffer, reshaped as the kernel does to [N, head_dim] with
// N = num_kv_pages_per_blk * page_size * num_combined_kv_heads_per_blk
// (kernel.py:616-619), is read at rows start, start + step, ... for K and
// start + 1, ... for V, with step = num_combined_kv_heads_per_blk.
// `words` is that buffer bitcast to uint32: [N / packing, head_dim].
//
// packing 1 (float32): the rows themselves.
// bfloat16: b = word rows start/2 :: step/2; K = bitcast<f32>(b << 16),
//   V = bitcast<f32>(b & 0xFFFF0000), then astype(bfloat16) (exact).
// other sub-32-bit dtypes: for i in 0, 2, .. packing-2, K_i = the dtype's
//   bits (b >> (i * bitwidth)) truncated to bitwidth, V_i from (i + 1).
//
// Writes kv_load_step(g) K and V arrays: k_out[j], v_out[j] each
// [num_kv_per_blk, head_dim] floats, for KV head start / 2 + j.
void strided_load_kv(const uint32_t* words, const Geometry& g, const KvCodec& codec, int64_t start, int64_t step,
                     float* const* k_out, float* const* v_out);

}  // namespace rpa::tiled
