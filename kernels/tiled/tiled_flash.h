// One flash_attention step (kernel.py:454-589): scores of a q block against one KV block and the online-softmax update.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/tiled/tiled_geometry.h"

namespace rpa::tiled {

// The lane count of the l / m scratch (kernel.py:837-842).
inline constexpr int64_t kLmLanes = 128;

struct FlashOptions {
  float sm_scale = 1.0f;
  bool has_soft_cap = false;
  float soft_cap = 0.0f;
  bool has_sliding_window = false;
  int64_t sliding_window = 0;
  float mask_value = 0.0f;
};

// The scalars of the current sequence and blocks (kernel.py:419-422, 490).
struct FlashScalars {
  int64_t kv_len = 0, q_len = 0, q_start = 0, q_end = 0;
  int64_t q_len_start = 0;  // q_blk_idx * num_q_per_blk
  int64_t kv_blk_idx = 0;
};

// store_start / store_end (kernel.py:512-513): the q rows of the block that
// the masked stores write.
struct StoreRange {
  int64_t start = 0, end = 0;
};
StoreRange store_range(const Geometry& g, const FlashScalars& s);

struct FlashRefs {
  const float* q = nullptr;  // fold_on_2nd_minor(q block of this KV head): [rows_alloc * group, head_dim]
  float* k = nullptr;        // [num_kv_per_blk, head_dim]; kv_mask zeroes rows in place
  float* v = nullptr;
  float* l = nullptr;        // l_ref.at[kv_head]: [rows_alloc * group, kLmLanes]
  float* m = nullptr;        // m_ref.at[kv_head]
  // acc_ref.at[:, q_head_idx : q_head_idx + group, :]: element (row, g, d)
  // at acc[row * acc_row_stride + g * head_dim + d].
  float* acc = nullptr;
  int64_t acc_row_stride = 0;
};

// Row updates that met a condition: how many, and the q row of the first.
struct RowTally {
  int64_t rows = 0;
  int64_t first_row = -1;
  void add(int64_t row) {
    if (rows++ == 0) first_row = row;
  }
  void merge(const RowTally& o) {
    if (rows == 0) first_row = o.first_row;
    rows += o.rows;
  }
};

struct FlashStats {
  double multiply_adds = 0;
  // Rows whose update gave the zeroed slots past kv_len (which the kernel
  // masks with mask_value, not removes) a non-zero weight. First rows are
  // block-local.
  RowTally padding_weighted;
  // Rows whose float32 update (dot(s_curr, v), l_alpha * o_curr + beta *
  // qkv) went past 3.4e38 from finite inputs: the kernel's unnormalised p.v
  // overflows where the reference's normalised one need not.
  RowTally pv_overflow;
};

// Reused buffers, so a step allocates nothing.
struct FlashWork {
  std::vector<float> scores;   // [num_kv_per_blk]
  std::vector<double> pv;      // [head_dim]
  std::vector<double> qd, kd, vd;  // q row, K and V block widened once per step
};

// Rows outside the store range are computed by the TPU and thrown away by
// the masked stores; being row-independent they cannot affect anything
// observable, so the emulation skips them.
void flash_attention(const Geometry& g, const FlashOptions& o, const FlashScalars& s, const FlashRefs& r,
                     FlashWork& work, FlashStats& stats);

}  // namespace rpa::tiled
