// Entry points into the fast kernel's SIMD code, dispatched at run time to the best Highway target of the CPU.
#pragma once

#include <cstdint>

#include "kernels/fast/plan.h"
#include "oracle/dtype.h"

namespace rpa::fast {

// Float lanes of the SIMD target the dispatcher picks on this CPU.
int64_t simd_lanes();
// Its name ("AVX3", "AVX2", "EMU128", ...).
const char* simd_target_name();
// Rows per tile item for `c`'s dtypes (only its dtypes, scales, head_dim
// and bf16_dot are read): four vectors of rows where the tiles read K and V
// where they lie (float32 without scales) or by VDPBF16PS; eight where each
// KV block is converted to float32 first, so a conversion serves twice the
// rows (prefill float8_e4m3fn measured 17% faster, float32 KV no faster:
// its taller tile computes more masked scores on the causal diagonal).
int64_t tile_rows(const KernelCtx& c);
// Most rows per KV head the target's group items take (0: none).
int64_t group_rows();

// Runs every work item of `plan` on `threads` threads.
void run_plan(const Plan& plan, int threads);

// float32 values cast to q's dtype as the tiles cast outputs (src may be dst).
void round_values(DType q, const float* src, int64_t n, float* dst);

// The largest of the n elements' bits with the sign cleared: |x| ordered as
// an integer, NaN and Inf from 0x7F800000 up.
uint32_t max_abs_bits(const float* p, int64_t n);

// Test hook (run on the dispatched target): one K/V row converted as the
// tiles convert it.
void convert_row_for_test(DType kv, DType q, bool scaled, float scale, const uint8_t* src, int64_t n, float* dst);

// Test hook: 64 bytes of float8_e4m3fn or float8_e5m2 KV as the decode item
// reads them, 64 bfloat16 words in its order (bf16_group-inl.h, Fp8Words),
// with `scale` folded in where `scaled` (fp8_bf16_table). False where the
// CPU or the dispatched target has no such item.
bool fp8_words_for_test(DType kv, bool scaled, float scale, const uint8_t* src, uint16_t* words);

// Test hook: 16 elements of KV (kv) at src as the AVX2 decode item computes
// with them for q's dtype, as float32 in head_dim order (avx2_group-inl.h,
// KvRowAsComputed): dequantised with `scale` where `scaled`, else Load16's
// values times kFp8Scale; `finite_kv`: the read the item makes where the
// sequence's KV is known finite (float8_e4m3fn's NaN patterns then read
// as numbers), else where it may hold NaN. False where the dispatched
// target is not AVX2 or the item does not take the dtypes or the scale.
bool avx2_kv_row_for_test(DType kv, DType q, bool scaled, float scale, bool finite_kv, const uint8_t* src,
                          float* dst);

// Test hook: e^x of n floats as the tiles' and group items' softmax
// computes its weights on the dispatched target (tiles-inl.h, WeightExp:
// ExpFast on every SIMD target), a vector at a time.
void weight_exp_for_test(const float* x, int64_t n, float* dst);

}  // namespace rpa::fast
