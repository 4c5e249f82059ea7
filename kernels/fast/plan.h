// The fast kernel's plan: per-sequence geometry as the reference slices it, row masks, skip proofs and work items.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/fast/fp8_bf16_table.h"
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
  bool skip_masked = false;  // a block masked for every row of a tile may be skipped (proved exact for every row)
  bool skip_kv = false;      // the K side of that proof holds: tiles prove their own q rows (tile_skip_masked)
  double kmax = 0;           // max |K element| over the sequence's attended keys
  bool k_finite = false;     // every K and V element of its keys finite (kmax then bounds every |K|)
  int64_t page_row = 0;      // row of the resolved page table
  // Subtracted from every exponent of the online softmax (p = e^(s - m -
  // p_shift)): the weights and their sum l carry the same factor, so O / l is
  // unchanged, but O = sum p * V stays inside float32 where l * max |V| would
  // not (V near float32's largest values; see softmax_shift). 0 almost always.
  float p_shift = 0.0f;
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
  int64_t kv_slot_bytes = 0;        // NativeKv::slot_bytes
  const int32_t* pages = nullptr;   // resolved page table [rows, pages_per_seq], in range
  float sm_scale = 1.0f;
  bool has_soft_cap = false;
  float soft_cap = 0.0f;
  float mask_value = 0.0f;
  bool has_sliding_window = false;
  int64_t sliding_window = 0;
  bool has_k_scale = false, has_v_scale = false;
  float k_scale = 1.0f, v_scale = 1.0f;
  // 8-bit float KV: K's and V's bytes as the decode item reads them
  // (fp8_bf16_table), the scale folded in where fp8_scale_in_table.
  Fp8Bf16Table k_fp8{}, v_fp8{};
  float* out = nullptr;  // [num_tokens, num_q_heads, head_dim]
  bool bf16_dot = false;  // the VDPBF16PS paths may run (Options::bf16_dot, resolved)
  // The decode item for bfloat16 and 8-bit float KV (GroupBf16) may run:
  // the CPU has AVX512-BF16 and AVX512-VBMI (the item is compiled for
  // both) and Options::bf16_decode_item.
  bool bf16_item = false;
  // The AVX2 decode item for float32, bfloat16 and 8-bit float KV (GroupAvx2) may run on
  // the AVX2 target: Options::bf16_decode_item.
  bool decode_item = false;
  // Set by the exact score recomputation when a recomputed score is not a
  // finite float32 (null: not watched): its rows may be NaN where the exact
  // math is finite, which recompute_nonfinite_rows (overflow_rows.h) mends.
  std::atomic<bool>* nonfinite_exact_scores = nullptr;
};

// Token t's row of q head h in `s`, and where its output row goes: the one
// place that knows both buffers' [tokens, num_q_heads, head_dim] layout.
inline const float* QHeadRow(const KernelCtx& c, const SeqPlan& s, int64_t t, int64_t h) {
  return c.q + ((s.q_row0 + t) * c.num_q_heads + h) * c.head_dim;
}
inline float* OutHeadRow(const KernelCtx& c, const SeqPlan& s, int64_t t, int64_t h) {
  return c.out + ((s.out_row0 + t) * c.num_q_heads + h) * c.head_dim;
}

// A unit of parallel work on one sequence. Row rho of a KV head is
// (token rho / group, q head kv_head * group + rho % group).
//  * tile (group == false): rows [row0, row1) of KV head kv_head, every key;
//  * group: every row of KV heads [kv_head, kv_head + heads) (few rows per
//    head, e.g. decode), keys [key0, key1] of their range; `partial` >= 0:
//    one key chunk of a split sequence, its (m, l, O) left at that offset
//    of Plan::partials for merge_partials.
struct WorkItem {
  int32_t seq = 0;
  int32_t kv_head = 0;
  int32_t heads = 1;
  bool group = false;
  int64_t row0 = 0, row1 = 0;
  int64_t key0 = 0, key1 = -1;
  int64_t partial = -1;
  double cost = 0;
};

// A sequence's group items split into key chunks, merged afterwards.
struct SplitRun {
  int32_t seq = 0, kv_head = 0, heads = 0;
  std::vector<int64_t> partials;  // offsets into Plan::partials, one per chunk
};

// What the SIMD code can take, for the planner.
struct PlanShape {
  int64_t tile_rows = 64;   // rows per tile item
  int64_t group_rows = 0;   // most rows per KV head for group items (0: none)
  int64_t group_heads = 8;  // KV heads per group item
  int64_t split_keys = 512; // group items of longer key ranges are split into chunks of at least this many keys
  int threads = 1;          // threads the plan runs on (chunks are sized for them)
};

struct Plan {
  KernelCtx ctx;
  std::vector<SeqPlan> seqs;
  std::vector<int32_t> pages;  // resolved page table (backs ctx.pages)
  std::vector<WorkItem> items; // grouped by (sequence, KV head), most expensive groups first
  std::vector<SplitRun> splits;
  // Written by the work items (disjoint ranges) while the plan is shared.
  mutable std::vector<float> partials;
  int64_t rows_written = 0;    // rows of `out` holding results; the rest are zeroed
  std::vector<std::string> diagnostics;
};

// p_shift for a sequence of `num_keys` keys whose |V| elements (as the
// math sees them, dequantised) are at most `vmax`: 0 unless num_keys * vmax
// exceeds 2^120, else the natural log of the excess, so that every partial
// sum of the weights times V stays below 2^120 (< float32's 2^128 range)
// while the largest weight, e^-p_shift, stays far above float32's smallest
// normal. The reference normalises the weights before p.v (kernel.py:142-145)
// and never sees that overflow; 0 for a non-finite vmax (the output is
// Inf or NaN there anyway).
float softmax_shift(double num_keys, double vmax);

// The interval of keys that token `t` of `s` attends (see RowRange).
RowRange row_range(const KernelCtx& c, const SeqPlan& s, int64_t t);

// The union of row_range over tokens [t0, t1] (ranges move monotonically
// with the token, so the union of a contiguous token range is an interval).
RowRange tile_key_range(const KernelCtx& c, const SeqPlan& s, int64_t t0, int64_t t1);

// Masked keys are negligible (weight below e^-150 of the row's largest)
// for q rows whose L1 norms are at most q1max and keys at most kmax.
bool masked_negligible(const KernelCtx& c, double q1max, double kmax);

// A bound on |sm_scale * q.k| as the float32 tiles compute it (before any
// soft cap), for q rows with ||q||_1 <= q1max and keys with every |K
// element| <= kmax (Hoelder's inequality), padded for the float32 rounding
// of the dot product and of the dequantisation; +inf where none holds.
double raw_score_bound(const KernelCtx& c, double q1max, double kmax);

// Whether every raw score of rows with ||q||_1 <= q1max against the keys
// of `s` is provably below `limit` (false when some K element is not finite).
bool scores_stay_below(const KernelCtx& c, const SeqPlan& s, double q1max, double limit);

// Whether a tile (rows [row0, row1) of KV head g) may skip blocks masked
// for all its rows: the sequence's proof, or its K side plus the tile's
// own q rows.
bool tile_skip_masked(const KernelCtx& c, const SeqPlan& s, int64_t g, int64_t row0, int64_t row1);

// Whether tokens [t0, t1] of `s` attend every key between them (a causal
// decode step, say): no block is masked for all their rows, so the skip
// proof has nothing to decide.
bool nothing_to_skip(const KernelCtx& c, const SeqPlan& s, int64_t t0, int64_t t1);

// Builds the plan for the SIMD code's `shape`; `allow_skip`: false visits
// every key of every sequence.
// Fails (returns false, `error` set) only for inputs no implementation can
// run: no pages to read while some sequence has keys.
bool make_plan(const rpa_problem& p, const NativeKv& kv, const PlanShape& shape, bool allow_skip, float* out, Plan& plan,
               std::string& error);

// Combines the key chunks of split sequences into their output rows (the
// online softmax's merge: rescale each chunk's O and l to the largest m).
void merge_partials(const Plan& plan);

}  // namespace rpa::fast
