// Tests of `rpa bench`'s suite: which rows a run makes, the work each row
// counts (from the issue's definitions, recomputed here), and the JSON
// contract. No timing is asserted.
#include "harness/bench_suite.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace rpa {
namespace {

// (q_len, kv_len) of the upstream test_ragged_paged_attention_mixed
// (jax tests/pallas/tpu_ragged_paged_attention_test.py at cec06d116c, lines
// 308-325), typed here from the source rather than taken from the harness.
const std::vector<std::pair<int64_t, int64_t>> kMixed = {
    {5, 18},   {1, 129},  {120, 597}, {1, 122}, {1, 64},   {32, 322},  {251, 463}, {1, 181},
    {1, 1107}, {99, 123}, {1, 31},    {5, 18},  {3, 1229}, {117, 229}, {1, 87},    {1, 1328}};
// kv_len of test_ragged_paged_attention_decode_only (lines 234-251; q_len 1).
const std::vector<int64_t> kDecodeKvLens = {18, 129, 597, 122, 64, 322, 463, 181,
                                            1107, 123, 31, 18, 1229, 229, 87, 1328};
constexpr int64_t kQHeads = 32, kKvHeads = 8, kHeadDim = 128;

// The issue's GFLOP: unmasked score entries (causal: query i of a sequence
// sees keys 0 .. kv_len - q_len + i) x 4 x head_dim, over every q head.
double mixed_flops() {
  double entries = 0;
  for (const auto& [q, kv] : kMixed)
    for (int64_t i = 0; i < q; ++i) entries += double(kv - q + i + 1);
  return entries * kQHeads * 4 * kHeadDim;
}

// KV bytes read: every key of every sequence, K and V, every KV head.
double mixed_kv_bytes(int elem_bytes) {
  double keys = 0;
  for (const auto& [q, kv] : kMixed) keys += double(kv);
  return keys * kKvHeads * 2 * kHeadDim * elem_bytes;
}

// One run shared by the tests (a few seconds: the ceilings, then the
// reference's calls).
const BenchReport& mixed_run() {
  static const BenchReport r = [] {
    BenchOptions o;
    o.quick = true;
    o.repeats = 4;
    o.shapes = {"mixed"};
    o.impls = {"fast", "reference"};
    o.q_dtypes = {"float32"};
    o.kv_dtypes = {"bfloat16"};
    return run_bench(o);
  }();
  return r;
}

TEST(BenchSuite, RowsCountTheIssuesWorkAndEveryFastCall) {
  const BenchReport& r = mixed_run();
  ASSERT_EQ(r.rows.size(), 2u) << bench_table(r);
  // The fast row first, though half its calls are timed after the reference's.
  EXPECT_EQ(r.rows[0].impl, "fast");
  EXPECT_EQ(r.rows[1].impl, "reference");
  EXPECT_EQ(r.rows[0].repeats, 4);  // both halves kept
  EXPECT_EQ(r.rows[1].repeats, 2);  // the slow rows' repeats with --quick
  for (const BenchRow& row : r.rows) {
    SCOPED_TRACE(row.impl);
    EXPECT_EQ(row.shape, "mixed");
    EXPECT_EQ(row.q_dtype, "float32");
    EXPECT_EQ(row.kv_dtype, "bfloat16");
    ASSERT_TRUE(std::isfinite(row.median_s) && row.median_s > 0);
    EXPECT_NEAR(row.gflops * 1e9 * row.median_s / mixed_flops(), 1.0, 1e-9);
    EXPECT_NEAR(row.gbs * 1e9 * row.median_s / mixed_kv_bytes(2), 1.0, 1e-9);
    EXPECT_NEAR(row.fma_fraction, row.gflops / r.ceilings.fma_gflops, 1e-12);
    EXPECT_NEAR(row.stream_fraction, row.gbs / r.ceilings.stream_gbs, 1e-12);
  }
  EXPECT_GT(r.ceilings.fma_gflops, 0);
  EXPECT_GT(r.ceilings.stream_gbs, 0);
  EXPECT_GE(r.ceilings.threads, 1);
}

// A shape's rows are timed in interleaved rounds, so every one of its calls
// is held at once: two q dtypes on each of two KV dtypes, every row kept
// with all its calls, in the order KV dtype then q dtype, none failed.
TEST(BenchSuite, EveryRowOfAShapeIsTimedInRowOrder) {
  BenchOptions o;
  o.quick = true;
  o.repeats = 3;
  o.shapes = {"decode"};
  o.impls = {"fast"};
  o.kv_dtypes = {"float32", "bfloat16"};
  const BenchReport r = run_bench(o);
  const std::vector<std::pair<std::string, std::string>> want = {
      {"float32", "float32"}, {"bfloat16", "float32"}, {"float32", "bfloat16"}, {"bfloat16", "bfloat16"}};
  ASSERT_EQ(r.rows.size(), want.size()) << bench_table(r);
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(r.rows[i].impl, "fast");
    EXPECT_EQ(r.rows[i].shape, "decode");
    EXPECT_EQ(r.rows[i].q_dtype, want[i].first) << i;
    EXPECT_EQ(r.rows[i].kv_dtype, want[i].second) << i;
    EXPECT_EQ(r.rows[i].repeats, 3);
    double keys = 0;
    for (int64_t kv : kDecodeKvLens) keys += double(kv);
    EXPECT_NEAR(r.rows[i].gbs * 1e9 * r.rows[i].median_s / (keys * kKvHeads * 2 * kHeadDim),
                want[i].second == "float32" ? 4.0 : 2.0, 1e-9);
  }
  for (const std::string& n : r.notes) EXPECT_EQ(n.find("failed"), std::string::npos) << n;
}

// A shape's fast calls are spread over the run (its own phase and one
// window after each later shape): every row still has exactly `repeats`
// calls, and the rows come out in shape order.
TEST(BenchSuite, CallsSpreadOverTheRunKeepEveryRowsCountAndOrder) {
  BenchOptions o;
  o.quick = true;
  o.repeats = 5;  // decode: 3 in its own phase, 2 after prefill's
  o.shapes = {"decode", "prefill"};
  o.impls = {"fast"};
  o.q_dtypes = {"bfloat16"};
  o.kv_dtypes = {"bfloat16"};
  const BenchReport r = run_bench(o);
  ASSERT_EQ(r.rows.size(), 2u) << bench_table(r);
  EXPECT_EQ(r.rows[0].shape, "decode");
  EXPECT_EQ(r.rows[1].shape, "prefill");
  for (const BenchRow& row : r.rows) EXPECT_EQ(row.repeats, 5) << row.shape;
}

TEST(BenchSuite, JsonHasTheIssuesFields) {
  const BenchReport& r = mixed_run();
  const nlohmann::json j = nlohmann::json::parse(bench_json(r));
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j.size(), 2u);
  const auto& c = j.at("ceilings");
  EXPECT_TRUE(c.at("fma_gflops").is_number());
  EXPECT_TRUE(c.at("stream_gbs").is_number());
  EXPECT_TRUE(c.at("threads").is_number_integer());
  const auto& rows = j.at("rows");
  ASSERT_EQ(rows.size(), r.rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    for (const char* key : {"impl", "shape", "q_dtype", "kv_dtype"}) EXPECT_TRUE(rows[i].at(key).is_string()) << key;
    for (const char* key : {"median_s", "gflops", "gbs", "fma_fraction", "stream_fraction"})
      EXPECT_TRUE(rows[i].at(key).is_number()) << key;
    EXPECT_EQ(rows[i].at("impl"), r.rows[i].impl);
    EXPECT_DOUBLE_EQ(rows[i].at("median_s").get<double>(), r.rows[i].median_s);
  }
}

}  // namespace
}  // namespace rpa
