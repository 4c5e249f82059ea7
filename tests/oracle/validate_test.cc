// Tests of the validation mirror: every raise and assert of kernel.py's checks with its exact Python message.
//
// Expected messages are written out as Python 3.11 prints them (worked out
// from the f-strings of kernel.py at cec06d116c, and checked against runs of
// that source), never taken from oracle/messages.cc.
#include "oracle/validate.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "oracle/py_error.h"

namespace rpa {
namespace {

// A valid call: 64 tokens, 8 q heads, 2 KV heads (4 combined), head_dim 128,
// page_size 16, 3 sequences of at most 4 pages.
CallArgs valid() {
  CallArgs a;
  a.q = {{64, 8, 128}, DType::kBFloat16};
  a.kv_pages = {{10, 16, 4, 128}, DType::kBFloat16};
  a.kv_lens = {{3}, DType::kInt32, true, {40, 64, 10}};
  a.page_indices = {{3, 4}, DType::kInt32, true, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1}};
  a.cu_q_lens = {{4}, DType::kInt32, true, {0, 30, 50, 60}};
  a.num_seqs = {{1}, DType::kInt32, true, {3}};
  return a;
}

struct Raised {
  std::string cls, message;
};

// What `f` raised, or {"", ""} when it returned.
Raised raised(const std::function<void()>& f) {
  try {
    f();
  } catch (const PyError& e) {
    return {e.cls(), e.message()};
  }
  return {"", ""};
}

Raised static_raised(const CallArgs& a) { return raised([&] { static_validate_inputs(a); }); }
Raised dynamic_raised(const CallArgs& a) { return raised([&] { dynamic_validate_inputs(a); }); }
Raised kernel_raised(const CallArgs& a, const std::string& kind = "TPU v5 lite") {
  return raised([&] { ragged_paged_attention_entry(a, kind); });
}

#define EXPECT_RAISES(r, cls_, msg_) \
  do {                               \
    const Raised got = (r);          \
    EXPECT_EQ(got.cls, cls_);        \
    EXPECT_EQ(got.message, msg_);    \
  } while (0)

#define EXPECT_ACCEPTS(r) EXPECT_RAISES(r, "", "")

TEST(StaticValidation, ValidCallPasses) {
  EXPECT_ACCEPTS(static_raised(valid()));
  EXPECT_ACCEPTS(dynamic_raised(valid()));
}

// kernel.py:236, 237, 242: tuple unpacking of the shapes.
TEST(StaticValidation, UnpackQ) {
  auto a = valid();
  a.q.shape = {64, 8};
  EXPECT_RAISES(static_raised(a), "ValueError", "not enough values to unpack (expected 3, got 2)");
  a.q.shape = {};
  EXPECT_RAISES(static_raised(a), "ValueError", "not enough values to unpack (expected 3, got 0)");
  a.q.shape = {64, 8, 128, 1};
  EXPECT_RAISES(static_raised(a), "ValueError", "too many values to unpack (expected 3)");
}

TEST(StaticValidation, UnpackKvPages) {
  auto a = valid();
  a.kv_pages.shape = {10, 16, 4};
  EXPECT_RAISES(static_raised(a), "ValueError", "not enough values to unpack (expected 4, got 3)");
  a.kv_pages.shape = {10, 16, 4, 128, 2};
  EXPECT_RAISES(static_raised(a), "ValueError", "too many values to unpack (expected 4)");
}

TEST(StaticValidation, UnpackPageIndices) {
  auto a = valid();
  a.page_indices = {{12}, DType::kInt32, false, {}};
  EXPECT_RAISES(static_raised(a), "ValueError", "not enough values to unpack (expected 2, got 1)");
  a.page_indices = {{3, 4, 1}, DType::kInt32, false, {}};
  EXPECT_RAISES(static_raised(a), "ValueError", "too many values to unpack (expected 2)");
}

// kernel.py:238
TEST(StaticValidation, AssertCombinedHeadsEven) {
  auto a = valid();
  a.kv_pages.shape[2] = 3;
  EXPECT_RAISES(static_raised(a), "AssertionError", "");
}

// kernel.py:239-240: an int or a bool is not a float.
TEST(StaticValidation, AssertScalesAreFloats) {
  auto a = valid();
  a.k_scale = PyValue::integer(1);
  EXPECT_RAISES(static_raised(a), "AssertionError", "");
  a.k_scale = PyValue::boolean(true);
  EXPECT_RAISES(static_raised(a), "AssertionError", "");
  a.k_scale = PyValue::floating(1.0);
  EXPECT_ACCEPTS(static_raised(a));
  a.v_scale = PyValue::integer(2);
  EXPECT_RAISES(static_raised(a), "AssertionError", "");
  a.v_scale = PyValue::floating(0.5);
  EXPECT_ACCEPTS(static_raised(a));
}

// kernel.py:243-244
TEST(StaticValidation, NumSeqsShape) {
  auto a = valid();
  a.num_seqs.shape = {2};
  EXPECT_RAISES(static_raised(a), "ValueError", "num_seqs.shape=(2,) must be (1,)");
  a.num_seqs.shape = {};
  EXPECT_RAISES(static_raised(a), "ValueError", "num_seqs.shape=() must be (1,)");
  a.num_seqs.shape = {1, 1};
  EXPECT_RAISES(static_raised(a), "ValueError", "num_seqs.shape=(1, 1) must be (1,)");
}

// kernel.py:245-248
TEST(StaticValidation, HeadDimMismatch) {
  auto a = valid();
  a.kv_pages.shape[3] = 64;
  EXPECT_RAISES(static_raised(a), "ValueError", "Q head_dim 128 must be the same as that of K/V 64.");
}

// kernel.py:249-253
TEST(StaticValidation, KvLensShape) {
  auto a = valid();
  a.kv_lens.shape = {4};
  EXPECT_RAISES(static_raised(a), "ValueError",
                "Expected kv_lens.shape=(4,) to be (3,) where `max_num_seqs` is `page_indices.shape[0]`.");
  a.kv_lens.shape = {3, 1};
  EXPECT_RAISES(static_raised(a), "ValueError",
                "Expected kv_lens.shape=(3, 1) to be (3,) where `max_num_seqs` is `page_indices.shape[0]`.");
}

// kernel.py:254-258 (the source has two spaces before "where").
TEST(StaticValidation, CuQLensShape) {
  auto a = valid();
  a.cu_q_lens.shape = {3};
  EXPECT_RAISES(static_raised(a), "ValueError",
                "Expected cu_q_lens.shape=(3,) to be (4,)  where `max_num_seqs` is `page_indices.shape[0]`.");
}

// kernel.py:259-268, numpy's and ml_dtypes' dtype reprs.
TEST(StaticValidation, IndexDtypes) {
  auto a = valid();
  a.kv_lens.dtype = DType::kInt64;
  EXPECT_RAISES(static_raised(a), "ValueError",
                "The dtype of `kv_lens`, `page_indices`, and `cu_q_lens` must be int32. Got "
                "kv_lens.dtype=dtype('int64'), page_indices.dtype=dtype('int32'), cu_q_lens.dtype=dtype('int32').");
  a = valid();
  a.cu_q_lens.dtype = DType::kBFloat16;
  a.page_indices.dtype = DType::kUInt32;
  EXPECT_RAISES(static_raised(a), "ValueError",
                "The dtype of `kv_lens`, `page_indices`, and `cu_q_lens` must be int32. Got "
                "kv_lens.dtype=dtype('int32'), page_indices.dtype=dtype('uint32'), cu_q_lens.dtype=dtype(bfloat16).");
}

// kernel.py:269-270, and its `%` by zero when there are no KV heads.
TEST(StaticValidation, HeadsDivisible) {
  auto a = valid();
  a.q.shape[1] = 5;
  EXPECT_RAISES(static_raised(a), "ValueError", "num_q_heads=5 must be divisible by num_kv_heads=2");
  a = valid();
  a.kv_pages.shape[2] = 0;
  EXPECT_RAISES(static_raised(a), "ZeroDivisionError", "integer modulo by zero");
}

// kernel.py:271-272; the upstream test's sliding_window 0 and -1
// (tests/pallas/tpu_ragged_paged_attention_test.py:450-480).
TEST(StaticValidation, SlidingWindowPositive) {
  auto a = valid();
  a.sliding_window = PyValue::integer(0);
  EXPECT_RAISES(static_raised(a), "ValueError", "sliding_window=0 must be positive.");
  a.sliding_window = PyValue::integer(-1);
  EXPECT_RAISES(static_raised(a), "ValueError", "sliding_window=-1 must be positive.");
  a.sliding_window = PyValue::floating(-0.0);
  EXPECT_RAISES(static_raised(a), "ValueError", "sliding_window=-0.0 must be positive.");
  a.sliding_window = PyValue::boolean(false);
  EXPECT_RAISES(static_raised(a), "ValueError", "sliding_window=False must be positive.");
  a.sliding_window = PyValue::integer(-(BigInt(1) << 70));
  EXPECT_RAISES(static_raised(a), "ValueError", "sliding_window=-1180591620717411303424 must be positive.");
  a.sliding_window = PyValue::floating(0.5);
  EXPECT_ACCEPTS(static_raised(a));
  a.sliding_window = PyValue::boolean(true);
  EXPECT_ACCEPTS(static_raised(a));
}

// kernel.py:273-274; the upstream test's soft_cap 0.0 (test.py:482-496).
TEST(StaticValidation, SoftCapNotZero) {
  auto a = valid();
  a.soft_cap = PyValue::floating(0.0);
  EXPECT_RAISES(static_raised(a), "ValueError", "soft_cap=0.0 must not be 0.0.");
  a.soft_cap = PyValue::integer(0);
  EXPECT_RAISES(static_raised(a), "ValueError", "soft_cap=0 must not be 0.0.");
  a.soft_cap = PyValue::floating(-0.0);
  EXPECT_RAISES(static_raised(a), "ValueError", "soft_cap=-0.0 must not be 0.0.");
  a.soft_cap = PyValue::boolean(false);
  EXPECT_RAISES(static_raised(a), "ValueError", "soft_cap=False must not be 0.0.");
  a.soft_cap = PyValue::floating(0x1p-1074);
  EXPECT_ACCEPTS(static_raised(a));
}

// kernel.py:275-281: not 0 < x <= pages_per_seq.
TEST(StaticValidation, KvPagesPerBlockRange) {
  auto a = valid();
  a.num_kv_pages_per_block = PyValue::integer(0);
  EXPECT_RAISES(static_raised(a), "ValueError", "num_kv_pages_per_block=0 must be in range (0, 4].");
  a.num_kv_pages_per_block = PyValue::integer(5);
  EXPECT_RAISES(static_raised(a), "ValueError", "num_kv_pages_per_block=5 must be in range (0, 4].");
  a.num_kv_pages_per_block = PyValue::floating(4.5);
  EXPECT_RAISES(static_raised(a), "ValueError", "num_kv_pages_per_block=4.5 must be in range (0, 4].");
  a.num_kv_pages_per_block = PyValue::floating(1e16);
  EXPECT_RAISES(static_raised(a), "ValueError", "num_kv_pages_per_block=1e+16 must be in range (0, 4].");
  a.num_kv_pages_per_block = PyValue::boolean(false);
  EXPECT_RAISES(static_raised(a), "ValueError", "num_kv_pages_per_block=False must be in range (0, 4].");
  for (PyValue ok : {PyValue::integer(4), PyValue::integer(1), PyValue::floating(0.5), PyValue::boolean(true)}) {
    a.num_kv_pages_per_block = ok;
    SCOPED_TRACE(py_repr(ok));
    EXPECT_ACCEPTS(static_raised(a));
  }
}

// kernel.py:282-285
TEST(StaticValidation, QueriesPerBlockAndVmemPositive) {
  auto a = valid();
  a.num_queries_per_block = PyValue::integer(0);
  EXPECT_RAISES(static_raised(a), "ValueError", "num_queries_per_block=0 must be positive.");
  a.num_queries_per_block = PyValue::floating(-1e-05);
  EXPECT_RAISES(static_raised(a), "ValueError", "num_queries_per_block=-1e-05 must be positive.");
  a = valid();
  a.vmem_limit_bytes = PyValue::integer(-1);
  EXPECT_RAISES(static_raised(a), "ValueError", "vmem_limit_bytes=-1 must be positive.");
  a.vmem_limit_bytes = PyValue::floating(0.0);
  EXPECT_RAISES(static_raised(a), "ValueError", "vmem_limit_bytes=0.0 must be positive.");
  a.vmem_limit_bytes = PyValue::integer(32 * 1024 * 1024);
  EXPECT_ACCEPTS(static_raised(a));
}

// No constraints on sm_scale and mask_value (kernel.py:286-287).
TEST(StaticValidation, SmScaleAndMaskValueUnchecked) {
  auto a = valid();
  a.sm_scale = PyValue::integer(0);
  a.mask_value = PyValue::boolean(true);
  EXPECT_ACCEPTS(static_raised(a));
}

// When several checks fail, the first in source order decides the message.
TEST(StaticValidation, OrderOfChecks) {
  auto a = valid();
  a.q.shape = {64, 8};          // :236
  a.kv_pages.shape[2] = 3;      // :238
  EXPECT_RAISES(static_raised(a), "ValueError", "not enough values to unpack (expected 3, got 2)");
  a = valid();
  a.kv_pages.shape[2] = 3;      // :238 before the shapes of :242
  a.page_indices.shape = {1};
  EXPECT_RAISES(static_raised(a), "AssertionError", "");
  a = valid();
  a.page_indices = {{12}, DType::kInt32, false, {}};  // :242 before :243
  a.num_seqs.shape = {2};
  EXPECT_RAISES(static_raised(a), "ValueError", "not enough values to unpack (expected 2, got 1)");
  a = valid();
  a.k_scale = PyValue::integer(1);  // :239 before :243
  a.num_seqs.shape = {2};
  EXPECT_RAISES(static_raised(a), "AssertionError", "");
  a = valid();
  a.num_seqs.shape = {2};           // :243 before :245
  a.kv_pages.shape[3] = 64;
  EXPECT_RAISES(static_raised(a), "ValueError", "num_seqs.shape=(2,) must be (1,)");
  a = valid();
  a.kv_lens.shape = {4};            // shape (:249) before dtype (:259)
  a.kv_lens.dtype = DType::kInt64;
  EXPECT_RAISES(static_raised(a), "ValueError",
                "Expected kv_lens.shape=(4,) to be (3,) where `max_num_seqs` is `page_indices.shape[0]`.");
  a = valid();
  a.kv_lens.dtype = DType::kInt64;  // dtype (:259) before heads (:269)
  a.q.shape[1] = 5;
  EXPECT_RAISES(static_raised(a), "ValueError",
                "The dtype of `kv_lens`, `page_indices`, and `cu_q_lens` must be int32. Got "
                "kv_lens.dtype=dtype('int64'), page_indices.dtype=dtype('int32'), cu_q_lens.dtype=dtype('int32').");
  a = valid();
  a.sliding_window = PyValue::integer(0);  // :271 before :273 before :275
  a.soft_cap = PyValue::floating(0.0);
  a.num_kv_pages_per_block = PyValue::integer(0);
  EXPECT_RAISES(static_raised(a), "ValueError", "sliding_window=0 must be positive.");
  a.sliding_window = PyValue::none();
  EXPECT_RAISES(static_raised(a), "ValueError", "soft_cap=0.0 must not be 0.0.");
  a.soft_cap = PyValue::none();
  a.num_queries_per_block = PyValue::integer(0);
  a.vmem_limit_bytes = PyValue::integer(0);
  EXPECT_RAISES(static_raised(a), "ValueError", "num_kv_pages_per_block=0 must be in range (0, 4].");
  a.num_kv_pages_per_block = PyValue::none();
  EXPECT_RAISES(static_raised(a), "ValueError", "num_queries_per_block=0 must be positive.");
}

// kernel.py:88-101: the reference passes no block-size or VMEM options.
TEST(StaticValidation, ReferenceIgnoresBlockOptions) {
  auto a = valid();
  a.num_kv_pages_per_block = PyValue::integer(0);
  a.num_queries_per_block = PyValue::integer(-1);
  a.vmem_limit_bytes = PyValue::integer(0);
  EXPECT_ACCEPTS(raised([&] { static_validate_reference_inputs(a); }));
  EXPECT_RAISES(static_raised(a), "ValueError", "num_kv_pages_per_block=0 must be in range (0, 4].");
  a.soft_cap = PyValue::integer(0);
  EXPECT_RAISES(raised([&] { static_validate_reference_inputs(a); }), "ValueError",
                "soft_cap=0 must not be 0.0.");
}

// The upstream error tests' call (test.py:450-496 via _test_ragged_paged_attention,
// :36-160): 3 sequences, 32 q / 8 KV heads, head_dim 128, page_size 16,
// 1000 pages, 512 tokens, 8 sequences max, 21 pages per sequence;
// dynamic_validate_inputs runs first and raises.
TEST(DynamicValidation, UpstreamErrorTests) {
  CallArgs a;
  a.q = {{512, 32, 128}, DType::kFloat32};
  a.kv_pages = {{1000, 16, 16, 128}, DType::kFloat32};
  a.kv_lens = {{8}, DType::kInt32, true, {328, 180, 255, 0, 0, 0, 0, 0}};
  a.page_indices = {{8, 21}, DType::kInt32, false, {}};
  a.cu_q_lens = {{9}, DType::kInt32, true, {0, 192, 320, 384, 0, 0, 0, 0, 0}};
  a.num_seqs = {{1}, DType::kInt32, true, {3}};
  EXPECT_ACCEPTS(dynamic_raised(a));
  a.sliding_window = PyValue::integer(0);
  EXPECT_RAISES(dynamic_raised(a), "ValueError", "sliding_window=0 must be positive.");
  a.sliding_window = PyValue::integer(-1);
  EXPECT_RAISES(dynamic_raised(a), "ValueError", "sliding_window=-1 must be positive.");
  a.sliding_window = PyValue::none();
  a.soft_cap = PyValue::floating(0.0);
  EXPECT_RAISES(dynamic_raised(a), "ValueError", "soft_cap=0.0 must not be 0.0.");
}

// kernel.py:192-193: num_seqs[0] prints as a 0-d JAX array of its own dtype.
TEST(DynamicValidation, NumSeqsTooLarge) {
  auto a = valid();
  a.num_seqs.data = {4};
  EXPECT_RAISES(dynamic_raised(a), "ValueError",
                "num_seqs[0]=Array(4, dtype=int32) must be less or equal to max_num_seqs=3");
  a.num_seqs.dtype = DType::kInt64;
  EXPECT_RAISES(dynamic_raised(a), "ValueError",
                "num_seqs[0]=Array(4, dtype=int64) must be less or equal to max_num_seqs=3");
}

// kernel.py:194: jnp.max of no sequences.
TEST(DynamicValidation, MaxOfEmptyKvLens) {
  auto a = valid();
  a.page_indices = {{0, 4}, DType::kInt32, true, {}};
  a.kv_lens = {{0}, DType::kInt32, true, {}};
  a.cu_q_lens = {{1}, DType::kInt32, true, {0}};
  a.num_seqs.data = {0};
  EXPECT_RAISES(dynamic_raised(a), "ValueError", "zero-size array to reduction operation max which has no identity");
}

// kernel.py:195-200: ceil(100 / 16) = 7 pages > 4.
TEST(DynamicValidation, PagesPerSeqTooSmall) {
  auto a = valid();
  a.kv_lens.data = {40, 100, 10};
  EXPECT_RAISES(dynamic_raised(a), "ValueError",
                "pages_per_seq=4 must be greater or equal to min_pages_per_seq=Array(7, dtype=int32) given "
                "max_kv_len=Array(100, dtype=int32) and page_size=16.");
  a.kv_lens.data = {40, 64, 10};  // exactly 4 pages
  EXPECT_ACCEPTS(dynamic_raised(a));
}

// The cdiv is int32 arithmetic: a max_kv_len near INT32_MAX wraps negative
// and passes; a zero page_size divides by zero XLA's way (-1 or -2), no error.
TEST(DynamicValidation, CdivWrapsInInt32) {
  auto a = valid();
  a.kv_lens.data = {40, 2147483647, 10};
  EXPECT_ACCEPTS(dynamic_raised(a));
  a = valid();
  a.kv_pages.shape[1] = 0;
  EXPECT_ACCEPTS(dynamic_raised(a));
}

// kernel.py:201-205, and the indexing by a 0-d array: a negative index has
// the size added once, then clamps.
TEST(DynamicValidation, TotalQTokens) {
  auto a = valid();
  a.cu_q_lens.data = {0, 30, 50, 70};
  EXPECT_RAISES(dynamic_raised(a), "ValueError", "Total q tokens 70 must be less or equal to max_num_batched_tokens=64.");
  a.num_seqs.data = {2};
  EXPECT_ACCEPTS(dynamic_raised(a));
  a.num_seqs.data = {-1};  // cu_q_lens[-1] = 70, and range(-1) is empty
  EXPECT_RAISES(dynamic_raised(a), "ValueError", "Total q tokens 70 must be less or equal to max_num_batched_tokens=64.");
  a.num_seqs.data = {-100};  // -100 + 4 = -96, clamped to 0
  EXPECT_ACCEPTS(dynamic_raised(a));
  a.cu_q_lens.data = {65, 65, 65, 65};
  EXPECT_RAISES(dynamic_raised(a), "ValueError", "Total q tokens 65 must be less or equal to max_num_batched_tokens=64.");
}

// kernel.py:206-212: q_len and kv_len print as int32 arrays; the loop
// stops at num_seqs[0].
TEST(DynamicValidation, QLenExceedsKvLen) {
  auto a = valid();
  a.kv_lens.data = {40, 19, 10};
  EXPECT_RAISES(dynamic_raised(a), "ValueError",
                "q_len=Array(20, dtype=int32) must be less or equal to kv_len=Array(19, dtype=int32) at sequence 1.");
  a.num_seqs.data = {1};
  EXPECT_ACCEPTS(dynamic_raised(a));
}

// cu_q_lens[i + 1] - cu_q_lens[i] wraps in int32, where Python ints would not.
TEST(DynamicValidation, QLenWrapsInInt32) {
  auto a = valid();
  a.cu_q_lens.data = {0, 30, -2147483647 - 1 + 10, 0};  // 30 -> INT_MIN + 10: wraps to a huge positive q_len
  a.kv_lens.data = {40, 64, 10};
  a.num_seqs.data = {2};
  EXPECT_RAISES(dynamic_raised(a), "ValueError",
                "q_len=Array(2147483628, dtype=int32) must be less or equal to kv_len=Array(64, dtype=int32) at "
                "sequence 1.");
}

// The dynamic checks run only after the static ones pass.
TEST(DynamicValidation, StaticChecksComeFirst) {
  auto a = valid();
  a.num_seqs.data = {9};
  a.soft_cap = PyValue::integer(0);
  EXPECT_RAISES(dynamic_raised(a), "ValueError", "soft_cap=0 must not be 0.0.");
}

Raised heads_raised(int64_t hq, int64_t hc, DType q, DType kv) {
  return raised([&] { get_min_heads_per_blk(hq, hc, q, kv); });
}

// The seed (../shared/seed): 6 KV heads (12 combined) with float32 or
// bfloat16 KV cannot be tiled (kernel.py:696-699).
TEST(MinHeadsPerBlk, SeedCaseIsRejected) {
  for (DType kv : {DType::kFloat32, DType::kBFloat16}) {
    EXPECT_RAISES(heads_raised(12, 12, DType::kBFloat16, kv), "ValueError",
                  "Not implemented: num_combined_kv_heads=12 can not be XLA fully tiled.");
  }
  // 8-bit KV packs 4 heads a word: 12 / 4 = 3 is not tileable either.
  EXPECT_RAISES(heads_raised(12, 12, DType::kBFloat16, DType::kInt8), "ValueError",
                "Not implemented: num_combined_kv_heads=12 can not be XLA fully tiled.");
}

// The alternatives the seed names: 4 or 8 KV heads, or 8-bit KV with a
// tileable count. Expected values worked by hand from kernel.py:689-715.
TEST(MinHeadsPerBlk, SeedAlternatives) {
  // float32 KV (packing 1), 4 KV heads: 8 combined, 8 % 8 == 0 -> 8; ratio 2 -> 8 q heads.
  auto h = get_min_heads_per_blk(8, 8, DType::kFloat32, DType::kFloat32);
  EXPECT_EQ(h.num_q_heads_per_blk, 8);
  EXPECT_EQ(h.num_combined_kv_heads_per_blk, 8);
  // bfloat16 (packing 2), 4 KV heads: 8 % 16 != 0 -> 8 combined; 4 * 4 = 16 q heads, 16 / 2 = 8 tiles.
  h = get_min_heads_per_blk(16, 8, DType::kBFloat16, DType::kBFloat16);
  EXPECT_EQ(h.num_q_heads_per_blk, 16);
  EXPECT_EQ(h.num_combined_kv_heads_per_blk, 8);
  // bfloat16, 8 KV heads: 16 combined -> 16; 8 * 4 = 32 q heads.
  h = get_min_heads_per_blk(32, 16, DType::kBFloat16, DType::kBFloat16);
  EXPECT_EQ(h.num_q_heads_per_blk, 32);
  EXPECT_EQ(h.num_combined_kv_heads_per_blk, 16);
  // bfloat16, 16 KV heads: 32 combined, a multiple of 16 -> blocks of 16 combined, 8 * 2 = 16 q heads.
  h = get_min_heads_per_blk(32, 32, DType::kBFloat16, DType::kBFloat16);
  EXPECT_EQ(h.num_q_heads_per_blk, 16);
  EXPECT_EQ(h.num_combined_kv_heads_per_blk, 16);
  // int8 / float8 KV (packing 4), 4 KV heads: 8 / 4 = 2 tiles; 8 % 32 != 0 -> 8; 4 * 2 = 8 q heads.
  for (DType kv : {DType::kInt8, DType::kFloat8E4M3FN, DType::kFloat8E5M2}) {
    h = get_min_heads_per_blk(8, 8, DType::kBFloat16, kv);
    EXPECT_EQ(h.num_q_heads_per_blk, 8);
    EXPECT_EQ(h.num_combined_kv_heads_per_blk, 8);
  }
}

// When the smallest q block cannot be tiled, all heads form one block (:715).
TEST(MinHeadsPerBlk, FallsBackToAllHeads) {
  // float32 KV, 1 KV head (2 combined), 2 q heads, float8 q (packing 4): 2 % 4 != 0.
  auto h = get_min_heads_per_blk(2, 2, DType::kFloat8E4M3FN, DType::kFloat32);
  EXPECT_EQ(h.num_q_heads_per_blk, 2);
  EXPECT_EQ(h.num_combined_kv_heads_per_blk, 2);
  // bfloat16 q, 2 KV heads, 6 q heads: min_q = 2 * 3 = 6, 6 / 2 = 3 is not tileable.
  h = get_min_heads_per_blk(6, 4, DType::kBFloat16, DType::kBFloat16);
  EXPECT_EQ(h.num_q_heads_per_blk, 6);
  EXPECT_EQ(h.num_combined_kv_heads_per_blk, 4);
}

// get_dtype_packing (:678-680) is 32 // bits: 0 for 64-bit and complex
// dtypes, whose `x % 0` (:690) raises.
TEST(MinHeadsPerBlk, PackingZero) {
  for (DType kv : {DType::kFloat64, DType::kInt64, DType::kComplex64, DType::kComplex128, DType::kUInt64})
    EXPECT_RAISES(heads_raised(8, 8, DType::kBFloat16, kv), "ZeroDivisionError", "integer modulo by zero");
  // The q dtype's packing is used only at :713.
  EXPECT_RAISES(heads_raised(8, 8, DType::kFloat64, DType::kFloat32), "ZeroDivisionError", "integer modulo by zero");
  // bool is 8 bits (packing 4), int2 2 bits (packing 16).
  EXPECT_RAISES(heads_raised(8, 8, DType::kBFloat16, DType::kInt2), "ValueError",
                "Not implemented: num_combined_kv_heads=8 can not be XLA fully tiled.");
  auto h = get_min_heads_per_blk(8, 8, DType::kBFloat16, DType::kBool);
  EXPECT_EQ(h.num_combined_kv_heads_per_blk, 8);
}

// The asserts of :700 and :702, reachable only by a direct call.
TEST(MinHeadsPerBlk, Asserts) {
  EXPECT_RAISES(heads_raised(2, 1, DType::kFloat32, DType::kFloat32), "AssertionError", "");
  EXPECT_RAISES(heads_raised(3, 4, DType::kFloat32, DType::kFloat32), "AssertionError", "");
  // 0 combined heads are "tileable" (0 % 8 == 0); then num_q_heads % 0.
  EXPECT_RAISES(heads_raised(4, 0, DType::kFloat32, DType::kFloat32), "ZeroDivisionError", "integer modulo by zero");
}

// ragged_paged_attention's preamble (kernel.py:777-822).
TEST(KernelEntry, SeedCaseAndAlternatives) {
  auto a = valid();
  a.q.shape[1] = 12;
  a.kv_pages.shape[2] = 12;
  a.kv_pages.dtype = DType::kFloat32;
  EXPECT_RAISES(kernel_raised(a), "ValueError", "Not implemented: num_combined_kv_heads=12 can not be XLA fully tiled.");
  a.kv_pages.shape[2] = 8;  // 4 KV heads
  a.q.shape[1] = 8;
  a.num_kv_pages_per_block = PyValue::integer(2);
  a.num_queries_per_block = PyValue::integer(16);
  const KernelEntry e = ragged_paged_attention_entry(a, "cpu");
  EXPECT_EQ(e.heads.num_q_heads_per_blk, 8);  // bf16 q: 4 * 2 = 8 -> 4 tiles
  EXPECT_EQ(e.heads.num_combined_kv_heads_per_blk, 8);
  EXPECT_EQ(py_repr(e.num_kv_pages_per_blk), "2");
  EXPECT_EQ(py_repr(e.num_q_per_blk), "16");
  const KernelConfig c = kernel_entry_config(a, "cpu");
  EXPECT_EQ(c.blocks.num_kv_pages_per_blk, 2);
  EXPECT_EQ(c.blocks.num_q_per_blk, 16);
}

// Either block size left None: both come from get_tuned_block_sizes, which
// needs a TPU v4 or later (tuned_block_sizes.py:1456-1458).
TEST(KernelEntry, TunedBlockSizesReplaceBoth) {
  auto a = valid();
  a.num_queries_per_block = PyValue::integer(16);
  EXPECT_RAISES(kernel_raised(a, "cpu"), "NotImplementedError", "TPU version must be 4 or higher.");
  a.device_kind = "TPU v4";
  EXPECT_ACCEPTS(kernel_raised(a, "cpu"));  // the case's device kind wins over the default
  const KernelEntry e = ragged_paged_attention_entry(a, "cpu");
  // v4: (min(pages_per_seq, 32), min(tokens, 32)); the given 16 is replaced.
  EXPECT_EQ(py_repr(e.num_kv_pages_per_blk), "4");
  EXPECT_EQ(py_repr(e.num_q_per_blk), "32");
  a.device_kind = "TPU abc";
  EXPECT_RAISES(kernel_raised(a), "AssertionError", "TPU abc");
}

// Both block sizes given pass through as Python holds them.
TEST(KernelEntry, GivenBlockSizesPassThrough) {
  auto a = valid();
  a.num_kv_pages_per_block = PyValue::floating(2.5);
  a.num_queries_per_block = PyValue::boolean(true);
  const KernelEntry e = ragged_paged_attention_entry(a, "cpu");
  EXPECT_EQ(py_repr(e.num_kv_pages_per_blk), "2.5");
  EXPECT_EQ(py_repr(e.num_q_per_blk), "True");
  EXPECT_THROW(kernel_entry_config(a, "cpu"), std::invalid_argument);
}

// No q heads: with block sizes given, :821's `% num_q_heads_per_kv_head`
// divides by zero; without, simplify_key's next_power_of_2(0) asserts.
TEST(KernelEntry, ZeroQHeads) {
  auto a = valid();
  a.q.shape[1] = 0;
  a.num_kv_pages_per_block = PyValue::integer(1);
  a.num_queries_per_block = PyValue::integer(8);
  EXPECT_RAISES(kernel_raised(a), "ZeroDivisionError", "integer modulo by zero");
  a.num_queries_per_block = PyValue::none();
  EXPECT_RAISES(kernel_raised(a), "AssertionError", "");
}

// Static validation runs before head blocking and block sizes.
TEST(KernelEntry, OrderOfChecks) {
  auto a = valid();
  a.kv_pages.shape[2] = 12;
  a.q.shape[1] = 12;
  a.kv_pages.dtype = DType::kFloat32;
  a.num_kv_pages_per_block = PyValue::integer(0);
  EXPECT_RAISES(kernel_raised(a, "cpu"), "ValueError", "num_kv_pages_per_block=0 must be in range (0, 4].");
  a.num_kv_pages_per_block = PyValue::none();
  // head blocking (:801) before the TPU version (:806)
  EXPECT_RAISES(kernel_raised(a, "cpu"), "ValueError",
                "Not implemented: num_combined_kv_heads=12 can not be XLA fully tiled.");
}

// ref_ragged_paged_attention's own checks (kernel.py:88-111, 148).
TEST(ReferenceEntry, NoSequences) {
  auto a = valid();
  EXPECT_EQ(reference_entry_checks(a), 3);
  a.num_seqs.data = {0};
  EXPECT_RAISES(raised([&] { reference_entry_checks(a); }), "ValueError", "Need at least one array to concatenate.");
  a.num_seqs.data = {-2};
  EXPECT_RAISES(raised([&] { reference_entry_checks(a); }), "ValueError", "Need at least one array to concatenate.");
}

TEST(Validation, MissingDataIsNotAPythonError) {
  auto a = valid();
  a.kv_lens.has_data = false;
  EXPECT_THROW(dynamic_validate_inputs(a), std::invalid_argument);
  a.kv_lens.shape = {7};  // static validation fails first: the data is never read
  EXPECT_RAISES(dynamic_raised(a), "ValueError",
                "Expected kv_lens.shape=(7,) to be (3,) where `max_num_seqs` is `page_indices.shape[0]`.");
}

}  // namespace
}  // namespace rpa
