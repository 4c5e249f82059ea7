// The fast kernel's plan: per-sequence geometry as the reference slices it, row masks, skip proofs and work items.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/fast/native_kv.h"
#include "oracle/dtype.h"
#include "rpa/rpa.h"

namespace rpa::fast {

// One sequence as ref_ragged_paged_attention (kernel.py:73-148) sees it.
struct SeqPlan {
  int64_t q_row0 = 0;      // first row of q: queries[q_start:q_end] with Python slice semantics
  int64_t num_tokens = 0;  // rows of that slice
  int64_t out_row0 = 0;    // where its rows go in the concatenated output
  int64_t num_keys = 0;    // len(gathered[:kv_len]) (Python slice: negative kv_len counts from the end)
  int32_t q_span0 = 0;     // kv_len - q_len in int32 (wrapping) arithmetic, the q_span of row 0
  bool skip_masked = false;  // a block masked for every row of a tile may be skipped (proved exact)
  int64_t page_row = 0;      // row of the resolved page table
};

// Keys row r attends without mask_value: [lo, hi]; keys outside get
// `+ mask_value` (or are skipped when SeqPlan::skip_masked). A row whose
// every key is masked (q_len > kv_len) gets [0, num_keys - 1] with no mask
// when mask_value is finite: softmax(s + c) = softmax(s) for a constant c,
// which is what the exact math gives (the float32 reference instead rounds
// s + mask_value to mask_value and averages V). With a non-finite mask_value
// the row keeps every key masked, so it is NaN as in the reference.
struct RowRange {
  int64_t lo, hi;
};

struct KernelCtx {
  DType q_dtype = DType::kFloat32, kv_dtype = DType::kFloat32;
  int64_t num_q_heads = 0, head_dim = 0, num_kv_heads = 0, group = 0;  // group: q heads per KV head
  int64_t page_size = 0, num_combined_kv_heads = 0, pages_per_seq = 0, total_num_pages = 0;
  const float* q = nullptr;         // [num_tokens, num_q_heads, head_dim] values of q_dtype
  const uint8_t* kv = nullptr;      // NativeKv::bytes
  int kv_elem_bytes = 4;
  const int32_t* pages = nullptr;   // resolved page table [rows, pages_per_seq], in range
  float sm_scale = 1.0f;
  bool has_soft_cap = false;
  float soft_cap = 0.0f;
  float mask_value = 0.0f;
  bool has_sliding_window = false;
  int64_t sliding_window = 0;
  bool has_k_scale = false, has_v_scale = false;
  float k_scale = 1.0f, v_scale = 1.0f;
  float* out = nullptr;  // [num_tokens, num_q_heads, head_dim]
};

// A unit of parallel work: rows [row0, row1) of one (sequence, KV head)
// group, row rho = token * group + head-in-group.
struct WorkItem {
  int32_t seq = 0;
  int32_t kv_head = 0;
  int64_t row0 = 0, row1 = 0;
  double cost = 0;
};

struct Plan {
  KernelCtx ctx;
  std::vector<SeqPlan> seqs;
  std::vector<int32_t> pages;  // resolved page table (backs ctx.pages)
  std::vector<WorkItem> items; // most expensive first
  int64_t rows_written = 0;    // rows of `out` holding results; the rest are zeroed
  std::vector<std::string> diagnostics;
};

// The interval of keys that token `t` of `s` attends (see RowRange).
RowRange row_range(const KernelCtx& c, const SeqPlan& s, int64_t t);

// The union of row_range over tokens [t0, t1] (ranges move monotonically
// with the token, so the union of a contiguous token range is an interval).
RowRange tile_key_range(const KernelCtx& c, const SeqPlan& s, int64_t t0, int64_t t1);

// Builds the plan. `tile_rows`: rows per work item (the SIMD code's tile);
// `allow_skip`: false visits every key of every sequence.
// Fails (returns false, `error` set) only for inputs no implementation can
// run: no pages to read while some sequence has keys.
bool make_plan(const rpa_problem& p, const NativeKv& kv, int64_t tile_rows, bool allow_skip, float* out, Plan& plan,
               std::string& error);

}  // namespace rpa::fast
