// Per-thread scratch buffers of the fast kernel's tiles, and the tile constants they are sized by.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "hwy/aligned_allocator.h"

namespace rpa::fast {

// Keys per KV block: one softmax rescale per block; a multiple of 16 (the
// register block of every tile shape).
inline constexpr int64_t kBlockKeys = 64;
// Keys per block of TileGroup (decode): smaller, so the prefetch of the next
// block is a short burst (measured faster than 32 or 64 on the bench's decode).
inline constexpr int64_t kGroupBlockKeys = 16;
static_assert(kGroupBlockKeys <= kBlockKeys && kGroupBlockKeys % 4 == 0);
// Most rows per KV head TileGroup handles (four groups of four), and most
// KV heads it takes at once.
inline constexpr int64_t kMaxRowsA = 16;
inline constexpr int64_t kGroupHeads = 8;
// Most vectors of rows a tile (TileB) holds: the tallest tile, used where
// K and V are converted per block, so one conversion serves its rows.
inline constexpr size_t kMaxTileRowVectors = 8;

struct Scratch {
  size_t lanes = 0;   // float lanes of the SIMD target
  size_t Dp = 0;      // head_dim rounded up to a multiple of lanes
  int64_t head_dim = -1;
  bool in_place = false;  // float32 KV read where it lies (no scale, head_dim a multiple of lanes)
  hwy::AlignedFreeUniquePtr<float[]> kbuf, vbuf;  // [kGroupHeads][kBlockKeys][Dp] converted K / V rows
  hwy::AlignedFreeUniquePtr<float[]> zero;        // [Dp] zeros (K rows past a block's end)
  hwy::AlignedFreeUniquePtr<float[]> exact_k;     // [Dp] a K row converted for ExactGroupScoresIfLarge
  hwy::AlignedFreeUniquePtr<float[]> qt;          // TileB: Q^T [head_dim][rows]; TileGroup: Q [heads][16][Dp]
  hwy::AlignedFreeUniquePtr<float[]> st;          // scores / probabilities of a block
  hwy::AlignedFreeUniquePtr<float[]> o;           // accumulator [rows][Dp]
  hwy::AlignedFreeUniquePtr<float[]> alpha, lsum; // per row
  hwy::AlignedFreeUniquePtr<int32_t[]> lo, hi;    // per row: attended keys [lo, hi]
  // TileGroup, in its score layout (lane i: row i % 4 of a group of 4):
  hwy::AlignedFreeUniquePtr<int32_t[]> lo_p, hi_p;  // [kMaxRowsA / 4][lanes]
  hwy::AlignedFreeUniquePtr<float[]> m_p, l_p;      // [kGroupHeads][kMaxRowsA / 4][lanes]
  hwy::AlignedFreeUniquePtr<int32_t[]> perms;       // lane permutations of ReduceGroups
  std::vector<const uint8_t*> krow, vrow;         // rows of the current block (float32 or native)

  void init(size_t simd_lanes, int64_t head_dim_, bool kv_in_place) {
    lanes = simd_lanes;
    head_dim = head_dim_;
    Dp = (size_t(head_dim_) + lanes - 1) / lanes * lanes;
    if (Dp == 0) Dp = lanes;
    in_place = kv_in_place;
    const size_t rows = std::max<size_t>(kMaxTileRowVectors * lanes, size_t(kMaxRowsA * kGroupHeads));
    kbuf = hwy::AllocateAligned<float>(size_t(kGroupHeads * kBlockKeys) * Dp);
    vbuf = hwy::AllocateAligned<float>(size_t(kGroupHeads * kBlockKeys) * Dp);
    zero = hwy::AllocateAligned<float>(Dp);
    exact_k = hwy::AllocateAligned<float>(Dp + lanes);
    for (size_t i = 0; i < Dp; ++i) zero[i] = 0.0f;
    qt = hwy::AllocateAligned<float>(rows * Dp);
    st = hwy::AllocateAligned<float>((size_t(kBlockKeys) + 16) * rows);
    o = hwy::AllocateAligned<float>(rows * Dp);
    alpha = hwy::AllocateAligned<float>(rows);
    lsum = hwy::AllocateAligned<float>(rows);
    lo = hwy::AllocateAligned<int32_t>(rows);
    lo_p = hwy::AllocateAligned<int32_t>(size_t(kMaxRowsA / 4) * lanes);
    hi_p = hwy::AllocateAligned<int32_t>(size_t(kMaxRowsA / 4) * lanes);
    m_p = hwy::AllocateAligned<float>(size_t(kGroupHeads * kMaxRowsA / 4) * lanes);
    l_p = hwy::AllocateAligned<float>(size_t(kGroupHeads * kMaxRowsA / 4) * lanes);
    perms = hwy::AllocateAligned<int32_t>(8 * lanes);
    hi = hwy::AllocateAligned<int32_t>(rows);
    krow.assign(size_t(kGroupHeads * kBlockKeys) + 16, nullptr);
    vrow.assign(size_t(kGroupHeads * kBlockKeys) + 16, nullptr);
  }
};

}  // namespace rpa::fast
