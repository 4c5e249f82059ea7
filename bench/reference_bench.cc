// Time per call of the reference attention and of its truths on the upstream "mixed" configuration (float32, bfloat16).
#include <benchmark/benchmark.h>

#include <map>

#include "harness/upstream_cases.h"
#include "oracle/reference.h"
#include "oracle/truth.h"

namespace rpa {
namespace {

// test_ragged_paged_attention_mixed: 16 sequences, 32 q / 8 KV heads,
// head_dim 128, page size 16, 1000 pages. `divisor` shrinks the sequence
// lengths (for the exact truth, whose 50-digit exp costs microseconds).
struct Inputs {
  Case c;
  std::vector<float> q, kv;
};

const Inputs& mixed(DType dtype, int64_t divisor) {
  static std::map<std::pair<DType, int64_t>, Inputs> cache;
  auto it = cache.find({dtype, divisor});
  if (it == cache.end()) {
    SeqLens lens = upstream_seq_lens("mixed");
    if (divisor > 1) lens = scaled_seq_lens(lens, divisor);
    Inputs in;
    in.c = upstream_case("mixed", lens, 32, 8, 128, 16, dtype, dtype);
    in.q = materialise_q(in.c);
    in.kv = materialise_kv(in.c);
    it = cache.emplace(std::make_pair(dtype, divisor), std::move(in)).first;
  }
  return it->second;
}

DType dtype_arg(const benchmark::State& state) { return state.range(0) == 0 ? DType::kFloat32 : DType::kBFloat16; }

void label(benchmark::State& state, const Inputs& in, int64_t rows) {
  state.SetLabel(std::string(dtype_name(dtype_arg(state))) + ", " + std::to_string(rows) + " rows");
  (void)in;
}

void BM_Reference(benchmark::State& state) {
  const Inputs& in = mixed(dtype_arg(state), 1);
  int64_t rows = 0;
  for (auto _ : state) {
    AttentionOutput out = ref_ragged_paged_attention(in.c.call, in.q, in.kv, static_cast<int>(state.range(1)));
    rows = out.rows;
    benchmark::DoNotOptimize(out.values.data());
  }
  label(state, in, rows);
}

void BM_Truth(benchmark::State& state) {
  const Inputs& in = mixed(dtype_arg(state), 1);
  TruthOptions o;
  o.threads = static_cast<int>(state.range(1));
  int64_t rows = 0;
  for (auto _ : state) {
    TruthOutput out = truth_ragged_paged_attention(in.c.call, in.q, in.kv, o);
    rows = out.rows;
    benchmark::DoNotOptimize(out.values.data());
  }
  label(state, in, rows);
}

void BM_TruthExactMixedOver8(benchmark::State& state) {
  const Inputs& in = mixed(dtype_arg(state), 8);
  TruthOptions o;
  o.mode = TruthMode::kExact;
  o.threads = static_cast<int>(state.range(1));
  int64_t rows = 0;
  for (auto _ : state) {
    TruthOutput out = truth_ragged_paged_attention(in.c.call, in.q, in.kv, o);
    rows = out.rows;
    benchmark::DoNotOptimize(out.values.data());
  }
  label(state, in, rows);
}

// Arguments: dtype (0 float32, 1 bfloat16), threads.
BENCHMARK(BM_Reference)->ArgsProduct({{0, 1}, {1}})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Truth)->ArgsProduct({{0, 1}, {1}})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_TruthExactMixedOver8)->ArgsProduct({{0, 1}, {1}})->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace rpa

BENCHMARK_MAIN();
