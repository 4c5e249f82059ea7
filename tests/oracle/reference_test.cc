// Tests of the float32 reference attention: hand-derived small cases, the source's index rules, its errors, its dtype path.
#include <gtest/gtest.h>

#include <cmath>

#include "oracle/einsum_dtypes.h"
#include "oracle/py_error.h"
#include "oracle/reference.h"
#include "tests/oracle/attention_fixture.h"

namespace rpa {
namespace {

using testing::Attn;
using testing::kNaN;

// One sequence on pages 0, 1, ... of a single-head call.
Attn one_sequence(DType qd, DType kvd, int64_t q_len, int64_t kv_len, int64_t D, int64_t ps = 4, int64_t pages = 4) {
  const int64_t pps = pages;
  std::vector<int64_t> idx;
  for (int64_t j = 0; j < pps; ++j) idx.push_back(j);
  return Attn(qd, kvd, q_len, 1, D, pages, ps, 1, {kv_len}, idx, {0, q_len}, 1);
}

AttentionOutput run(const Attn& t, int threads = 1) { return ref_ragged_paged_attention(t.a, t.q, t.kv, threads); }

float out_at(const AttentionOutput& o, int64_t row, int64_t h, int64_t d) {
  return o.values[static_cast<size_t>((row * o.num_q_heads + h) * o.head_dim + d)];
}

TEST(Reference, OneQueryOneKeyReturnsV) {
  // softmax over a single key is 1, so the output is V itself.
  for (DType d : {DType::kFloat32, DType::kBFloat16, DType::kFloat16}) {
    Attn t = one_sequence(d, d, 1, 1, 4);
    const float v[4] = {1.5f, -2.0f, 0.25f, 3.0f};
    for (int i = 0; i < 4; ++i) {
      t.qv(0, 0, i) = 0.5f * float(i);
      t.key(0, 0, 0, true, i) = 1.0f - float(i);
      t.key(0, 0, 0, false, i) = v[i];
    }
    const AttentionOutput o = run(t);
    ASSERT_EQ(o.rows, 1);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(out_at(o, 0, 0, i), v[i]) << dtype_name(d);
  }
}

// p.v is the einsum rounded once (kernel.py:145): three equal scores (p =
// float32(1/3) each) over V = (2^126, 1, -2^126) give exactly p * 1. A
// double accumulation in key order loses the 1 against 2^126 and returns
// 0 (found by the kernel_diff fuzz target with v_scale 2^120).
TEST(Reference, PvCancellationAmongHugeValuesIsExact) {
  Attn t = one_sequence(DType::kFloat32, DType::kFloat32, 1, 3, 1);
  const float v[3] = {0x1p126f, 1.0f, -0x1p126f};
  for (int c = 0; c < 3; ++c) t.key(0, c, 0, false, 0) = v[c];  // K = 0: equal scores
  const AttentionOutput o = run(t);
  EXPECT_EQ(out_at(o, 0, 0, 0), 1.0f / 3.0f);
}

TEST(Reference, TwoKeysFollowTheSoftmaxFormula) {
  // Scores 0 and 1: p = (1, e) / (1 + e); V rows e_0 and e_1.
  Attn t = one_sequence(DType::kFloat32, DType::kFloat32, 1, 2, 2);
  t.qv(0, 0, 0) = 1;
  t.key(0, 1, 0, true, 0) = 1;
  t.key(0, 0, 0, false, 0) = 1;
  t.key(0, 1, 0, false, 1) = 1;
  const AttentionOutput o = run(t);
  const double e = std::exp(1.0);
  EXPECT_NEAR(out_at(o, 0, 0, 0), 1 / (1 + e), 1e-7);
  EXPECT_NEAR(out_at(o, 0, 0, 1), e / (1 + e), 1e-7);
}

TEST(Reference, CausalMaskAlignsToTheSequenceEnd) {
  // q_len 2, kv_len 3: q_span = 1 + r, so row 0 sees keys 0-1 and row 1 keys
  // 0-2. sm_scale 0 makes every score 0, the softmax uniform over them.
  Attn t = one_sequence(DType::kFloat32, DType::kFloat32, 2, 3, 1);
  t.a.sm_scale = PyValue::floating(0.0);
  for (int c = 0; c < 3; ++c) t.key(0, c, 0, false, 0) = float(1 << c);  // 1, 2, 4
  const AttentionOutput o = run(t);
  EXPECT_FLOAT_EQ(out_at(o, 0, 0, 0), 1.5f);
  EXPECT_NEAR(out_at(o, 1, 0, 0), 7.0 / 3.0, 1e-6);
}

TEST(Reference, SlidingWindowKeepsTheLastKeys) {
  // q_span = 4; the window masks q_span - 2 >= kv_span, i.e. keys 0-2.
  Attn t = one_sequence(DType::kFloat32, DType::kFloat32, 1, 5, 1, 4, 2);
  t.a.sm_scale = PyValue::floating(0.0);
  t.a.sliding_window = PyValue::integer(2);
  for (int c = 0; c < 5; ++c) t.key(0, c, 0, false, 0) = float(c);
  EXPECT_FLOAT_EQ(out_at(run(t), 0, 0, 0), 3.5f);
  // A float window compares in float32: 1.5 keeps keys with 4 - 1.5 < c.
  t.a.sliding_window = PyValue::floating(1.5);
  EXPECT_FLOAT_EQ(out_at(run(t), 0, 0, 0), 3.5f);
}

TEST(Reference, SoftCapSaturatesScores) {
  // Scores 0 and 100, soft_cap 1: 1 * tanh(100) = 1, so p = (1, e) / (1 + e).
  Attn t = one_sequence(DType::kFloat32, DType::kFloat32, 1, 2, 1);
  t.qv(0, 0, 0) = 10;
  t.key(0, 1, 0, true, 0) = 10;
  t.key(0, 1, 0, false, 0) = 1;
  t.a.soft_cap = PyValue::floating(1.0);
  const double e = std::exp(1.0);
  EXPECT_NEAR(out_at(run(t), 0, 0, 0), e / (1 + e), 1e-7);
}

TEST(Reference, FullyMaskedRowsAverageEveryKey) {
  // q_len 4 > kv_len 2 (static validation allows it): q_span = r - 2, so rows
  // 0 and 1 mask both keys. Every score becomes score + mask_value, which
  // rounds to mask_value itself (its float32 ulp is 2^104), so the softmax
  // is uniform and the row is the mean of V over all keys. Row 2 sees key 0.
  Attn t = one_sequence(DType::kFloat32, DType::kFloat32, 4, 2, 1);
  for (int r = 0; r < 4; ++r) t.qv(r, 0, 0) = 0.25f * float(r + 1);
  t.key(0, 0, 0, true, 0) = 3;
  t.key(0, 1, 0, true, 0) = -5;
  t.key(0, 0, 0, false, 0) = 2;
  t.key(0, 1, 0, false, 0) = 6;
  const AttentionOutput o = run(t);
  ASSERT_EQ(o.rows, 4);
  EXPECT_EQ(out_at(o, 0, 0, 0), 4.0f);
  EXPECT_EQ(out_at(o, 1, 0, 0), 4.0f);
  EXPECT_EQ(out_at(o, 2, 0, 0), 2.0f);
}

TEST(Reference, ProbabilitiesAreCastToVsDtype) {
  // Three equal scores: p = 1/3 in float32, 0.333984375 in bfloat16. With
  // V = (1, 1, 1 + 2^-7): bf16 probabilities give 0.333984375 * 3.0078125 =
  // 1.00456..., which rounds to bf16 1.0078125; float32 ones would give
  // 1.00260... and round to 1.0.
  Attn t = one_sequence(DType::kBFloat16, DType::kBFloat16, 1, 3, 1);
  t.a.sm_scale = PyValue::floating(0.0);
  t.key(0, 0, 0, false, 0) = 1;
  t.key(0, 1, 0, false, 0) = 1;
  t.key(0, 2, 0, false, 0) = 1.0078125f;
  EXPECT_EQ(out_at(run(t), 0, 0, 0), 1.0078125f);
}

TEST(Reference, IntegerVWithoutScaleTruncatesProbabilities) {
  // int8 V: probabilities cast to int8 are 1 only where p == 1. Prefill row
  // 0 sees key 0 alone (p = 1): v0; row 1 sees two equal scores (p = 0.5): 0.
  Attn t = one_sequence(DType::kBFloat16, DType::kInt8, 2, 2, 2);
  t.a.sm_scale = PyValue::floating(0.0);
  t.key(0, 0, 0, false, 0) = 7, t.key(0, 0, 0, false, 1) = -3;
  t.key(0, 1, 0, false, 0) = 5, t.key(0, 1, 0, false, 1) = 1;
  const AttentionOutput o = run(t);
  EXPECT_EQ(out_at(o, 0, 0, 0), 7.0f);
  EXPECT_EQ(out_at(o, 0, 0, 1), -3.0f);
  EXPECT_EQ(out_at(o, 1, 0, 0), 0.0f);
  EXPECT_EQ(out_at(o, 1, 0, 1), 0.0f);
}

TEST(Reference, ScalesDequantiseToQsDtype) {
  // One key: the output is V dequantised, (v.astype(f32) * v_scale).astype(q).
  Attn t = one_sequence(DType::kBFloat16, DType::kFloat8E4M3FN, 1, 1, 1);
  t.key(0, 0, 0, false, 0) = 1.5f;
  t.a.v_scale = PyValue::floating(0.1);
  t.a.k_scale = PyValue::floating(0.5);
  // 1.5 * 0.1f = 0.15000000596 in float32, 0.150390625 in bfloat16.
  EXPECT_EQ(out_at(run(t), 0, 0, 0), 0.150390625f);
}

TEST(Reference, GqaHeadsReadTheirKvHead) {
  // Hq 4 over Hkv 2: q head h reads KV head h / 2, so each head's output
  // equals a one-head call on that q head and that KV head.
  const int64_t D = 3, L = 3;
  Attn big(DType::kFloat32, DType::kFloat32, L, 4, D, 1, 4, 2, {L}, {0}, {0, L}, 1);
  for (int64_t r = 0; r < L; ++r)
    for (int64_t h = 0; h < 4; ++h)
      for (int64_t d = 0; d < D; ++d) big.qv(r, h, d) = 0.1f * float(r + 2 * h - d);
  for (int64_t c = 0; c < L; ++c)
    for (int64_t g = 0; g < 2; ++g)
      for (int64_t d = 0; d < D; ++d) {
        big.key(0, c, g, true, d) = 0.3f * float(c - g + d);
        big.key(0, c, g, false, d) = float(c + 10 * g + 100 * d);
      }
  const AttentionOutput o = run(big);
  for (int64_t h = 0; h < 4; ++h) {
    Attn one(DType::kFloat32, DType::kFloat32, L, 1, D, 1, 4, 1, {L}, {0}, {0, L}, 1);
    for (int64_t r = 0; r < L; ++r)
      for (int64_t d = 0; d < D; ++d) one.qv(r, 0, d) = big.qv(r, h, d);
    for (int64_t c = 0; c < L; ++c)
      for (int64_t d = 0; d < D; ++d) {
        one.key(0, c, 0, true, d) = big.key(0, c, h / 2, true, d);
        one.key(0, c, 0, false, d) = big.key(0, c, h / 2, false, d);
      }
    const AttentionOutput s = run(one);
    for (int64_t r = 0; r < L; ++r)
      for (int64_t d = 0; d < D; ++d) EXPECT_EQ(out_at(o, r, h, d), out_at(s, r, 0, d)) << h << " " << r << " " << d;
  }
}

// Two sequences with NaN everywhere the reference must not read.
Attn poisoned_batch(float poison) {
  // Sequence 0: q rows 0-1, kv_len 3 on page 2; sequence 1: q row 2, kv_len 5
  // on pages 0 and 3. Pages 1 and 4 unused; slots past kv_len poisoned; q row
  // 3 (past cu_q_lens[num_seqs]) and sequence 2 (past num_seqs) poisoned.
  Attn t(DType::kFloat32, DType::kFloat32, 4, 2, 2, 5, 4, 1, {3, 5, 4}, {2, 9, 0, 3, 1, 1}, {0, 2, 3, 4}, 2);
  for (auto& x : t.kv) x = poison;
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t d = 0; d < 2; ++d) {
      for (int64_t r = 0; r < 3; ++r) t.qv(r, h, d) = 0.5f * float(r - h + d);
      t.qv(3, h, d) = poison;
    }
  auto fill = [&](int64_t page, int64_t slot, int64_t c) {
    for (int64_t d = 0; d < 2; ++d) {
      t.kvv(page, slot, 0, true, d) = 0.25f * float(c + d);
      t.kvv(page, slot, 0, false, d) = float(c * 3 - d);
    }
  };
  for (int64_t c = 0; c < 3; ++c) fill(2, c, c);
  for (int64_t c = 0; c < 5; ++c) fill(c < 4 ? 0 : 3, c % 4, c + 7);
  return t;
}

TEST(Reference, PoisonedPaddingDoesNotLeak) {
  const AttentionOutput nan = run(poisoned_batch(kNaN)), big = run(poisoned_batch(3e38f)),
                        zero = run(poisoned_batch(0.0f));
  ASSERT_EQ(nan.rows, 3);
  for (size_t i = 0; i < nan.values.size(); ++i) {
    EXPECT_TRUE(std::isfinite(nan.values[i])) << i;
    EXPECT_EQ(nan.values[i], zero.values[i]) << i;
    EXPECT_EQ(big.values[i], zero.values[i]) << i;
  }
}

TEST(Reference, OutOfRangePageIndicesWrapOnceThenClamp) {
  Attn base = poisoned_batch(0.0f);
  const AttentionOutput expected = run(base);
  Attn wrapped = base;
  wrapped.a.page_indices.data[0] = 2 - 5;  // -3 wraps to page 2
  Attn clamped = base;
  clamped.a.page_indices.data[3] = 7;  // beyond 4 clamps to page 4 ...
  for (int64_t slot = 0; slot < 4; ++slot)  // ... so give page 4 page 3's contents
    for (int64_t head = 0; head < 2; ++head)
      for (int64_t d = 0; d < 2; ++d) clamped.kvv(4, slot, 0, head == 0, d) = base.kvv(3, slot, 0, head == 0, d);
  const AttentionOutput w = run(wrapped), c = run(clamped);
  EXPECT_EQ(w.values, expected.values);
  EXPECT_EQ(c.values, expected.values);
  ASSERT_EQ(w.diagnostics.size(), 1u);
  EXPECT_NE(w.diagnostics[0].find("page_indices[0, 0] = -3"), std::string::npos) << w.diagnostics[0];
  EXPECT_NE(w.diagnostics[0].find("reads page 2"), std::string::npos);
  ASSERT_EQ(c.diagnostics.size(), 1u);
  EXPECT_NE(c.diagnostics[0].find("reads page 4"), std::string::npos) << c.diagnostics[0];
  EXPECT_TRUE(expected.diagnostics.empty());
  // Unused padding entries (index 9 of sequence 0, whose kv_len needs one page) are not reported.
}

TEST(Reference, NegativeKvLenCutsFromTheEnd) {
  // [:kv_len] with kv_len -3 over 2 pages of 4 keeps 5 rows; the mask sees
  // kv_len = -3, so q_span = -4 masks every key: the mean of those 5 rows.
  Attn t = one_sequence(DType::kFloat32, DType::kFloat32, 1, -3, 1, 4, 2);
  for (int c = 0; c < 8; ++c) t.key(0, c, 0, false, 0) = float(c * c);
  EXPECT_FLOAT_EQ(out_at(run(t), 0, 0, 0), (0 + 1 + 4 + 9 + 16) / 5.0f);
}

TEST(Reference, EmptyKvGivesZeros) {
  // kv_len 0: the scores are [h, q, 0] and p.v contracts nothing.
  Attn t = one_sequence(DType::kFloat32, DType::kFloat32, 1, 0, 2);
  t.qv(0, 0, 0) = kNaN;
  const AttentionOutput o = run(t);
  ASSERT_EQ(o.rows, 1);
  EXPECT_EQ(out_at(o, 0, 0, 0), 0.0f);
}

TEST(Reference, OutputRowsFollowTheQuerySlices) {
  // cu_q_lens (0, 3) over 2 tokens: queries[0:3] has 2 rows, but the mask
  // sees q_len 3 (kv_len 3): q_span = r, so row 0 sees key 0 only.
  Attn t(DType::kFloat32, DType::kFloat32, 2, 1, 1, 1, 4, 1, {3}, {0}, {0, 3}, 1);
  t.key(0, 0, 0, false, 0) = 5;
  t.key(0, 1, 0, false, 0) = 9;
  const AttentionOutput o = run(t);
  ASSERT_EQ(o.rows, 2);
  EXPECT_EQ(out_at(o, 0, 0, 0), 5.0f);
  // num_seqs beyond max_num_seqs: the extra iterations read clamped, empty slices.
  t.a.num_seqs.data[0] = 1000;
  EXPECT_EQ(run(t).rows, 2);
}

TEST(Reference, ThreadsDoNotChangeTheResult) {
  Attn t = poisoned_batch(kNaN);
  EXPECT_EQ(run(t, 1).values, run(t, 3).values);
}

void expect_raises(const Attn& t, const std::string& cls, const std::string& message) {
  try {
    run(t);
    ADD_FAILURE() << "no exception, expected " << cls << ": " << message;
  } catch (const PyError& e) {
    EXPECT_EQ(e.cls(), cls);
    EXPECT_EQ(e.message(), message);
  }
}

TEST(Reference, RaisesWhatThePythonReferenceRaises) {
  Attn t = one_sequence(DType::kFloat32, DType::kFloat32, 1, 1, 2);
  Attn none = t;
  none.a.num_seqs.data[0] = 0;
  expect_raises(none, "ValueError", "Need at least one array to concatenate.");
  Attn window = t;
  window.a.sliding_window = PyValue::integer(0);
  expect_raises(window, "ValueError", "sliding_window=0 must be positive.");
  Attn huge = t;
  huge.a.sliding_window = PyValue::integer(BigInt(1) << 40);
  expect_raises(huge, "OverflowError", "Python int 1099511627776 too large to convert to int32");
  Attn scale = t;
  scale.a.sm_scale = PyValue::integer(BigInt(-3000000000LL));
  expect_raises(scale, "OverflowError", "Python int -3000000000 too large to convert to int32");
  Attn float_ns = t;
  float_ns.a.num_seqs.dtype = DType::kFloat32;
  expect_raises(float_ns, "TypeError", "Only integer scalar arrays can be converted to a scalar index.");
  // No sequences at all: kv_lens[0] on an empty axis.
  Attn empty(DType::kFloat32, DType::kFloat32, 1, 1, 2, 1, 4, 1, {}, {}, {0}, 1);
  empty.a.page_indices.shape = {0, 1};
  expect_raises(empty, "IndexError", "index is out of bounds for axis 0 with size 0");
  // No pages: the gather's slice of one page does not fit.
  Attn nopages(DType::kFloat32, DType::kFloat32, 1, 1, 2, 0, 4, 1, {1}, {0}, {0, 1}, 1);
  expect_raises(nopages, "TypeError",
                "Slice size at index 0 in gather op is out of range, must be within [0, 0 + 1), got 1.");
  // head_dim 0: reshape(-1, num_kv_heads, 0) divides by zero.
  Attn nodim(DType::kFloat32, DType::kFloat32, 1, 1, 0, 1, 4, 1, {1}, {0}, {0, 1}, 1);
  expect_raises(nodim, "ZeroDivisionError", "integer modulo by zero");
}

TEST(Reference, MalformedContentsAreInvalidArguments) {
  Attn t = one_sequence(DType::kFloat32, DType::kFloat32, 1, 1, 2);
  t.q.pop_back();
  EXPECT_THROW(run(t), std::invalid_argument);
  Attn nodata = one_sequence(DType::kFloat32, DType::kFloat32, 1, 1, 2);
  nodata.a.kv_lens.has_data = false;
  EXPECT_THROW(run(nodata), std::invalid_argument);
}

TEST(EinsumDtypes, DotGeneralResultFollowsTypeProperties) {
  // (maxexp, nmant, bits) ordering of lax.py:5837-5852.
  EXPECT_EQ(dot_general_result_dtype(DType::kFloat32, DType::kBFloat16), DType::kFloat32);
  EXPECT_EQ(dot_general_result_dtype(DType::kFloat16, DType::kBFloat16), DType::kBFloat16);  // maxexp 128 > 16
  EXPECT_EQ(dot_general_result_dtype(DType::kFloat8E5M2, DType::kFloat16), DType::kFloat16);  // nmant 10 > 2
  EXPECT_EQ(dot_general_result_dtype(DType::kInt8, DType::kFloat8E4M3FN), DType::kFloat8E4M3FN);
  EXPECT_EQ(dot_general_result_dtype(DType::kInt4, DType::kInt8), DType::kInt8);
  EXPECT_EQ(dot_general_result_dtype(DType::kFloat8E4M3FN, DType::kFloat8E5M2), DType::kFloat8E5M2);
}

TEST(EinsumDtypes, ProbabilitiesAndPvFollowV) {
  ReferenceDtypes t = reference_dtypes(DType::kBFloat16, DType::kFloat8E4M3FN, false, false);
  EXPECT_EQ(t.k, DType::kFloat8E4M3FN);
  EXPECT_EQ(t.probs, DType::kFloat8E4M3FN);
  EXPECT_EQ(t.pv, DType::kFloat8E4M3FN);
  ASSERT_EQ(t.pv_chain_length, 3);
  EXPECT_EQ(t.pv_chain[1], DType::kFloat16);
  EXPECT_EQ(t.out, DType::kBFloat16);
  t = reference_dtypes(DType::kBFloat16, DType::kFloat8E4M3FN, true, true);
  EXPECT_EQ(t.k, DType::kBFloat16);
  EXPECT_EQ(t.pv, DType::kBFloat16);
  EXPECT_EQ(t.pv_chain_length, 2);
  t = reference_dtypes(DType::kFloat32, DType::kInt4, false, false);
  EXPECT_TRUE(t.pv_integer);
  EXPECT_EQ(t.pv, DType::kInt4);
  EXPECT_EQ(wrap_signed(9, 4), -7);
  EXPECT_EQ(wrap_signed(-129, 8), 127);
  EXPECT_EQ(convert_value(DType::kInt8, DType::kInt4, 9.0f), -7.0f);
  EXPECT_EQ(convert_value(DType::kFloat32, DType::kInt8, 0.999f), 0.0f);
}

}  // namespace
}  // namespace rpa
