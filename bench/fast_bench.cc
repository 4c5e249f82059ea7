// Time per call of the fast kernel on the upstream decode / prefill / mixed shapes, each KV dtype, cold or warm caches.
//
// What `rpa bench` reports as the fast rows, with Google Benchmark's
// repetitions and statistics (median, minimum) for comparing two builds:
//   build/bench/fast_bench --benchmark_filter='shape:0/q:0/kv:1/'
//     --benchmark_repetitions=20 --benchmark_report_aggregates_only=true
// Arguments: shape (0 decode, 1 prefill, 2 mixed), q dtype (0 float32,
// 1 bfloat16), KV dtype (0 float32, 1 bfloat16, 2 float8_e4m3fn), threads
// (0: every hardware thread), cold (1: caches flushed before each call, as
// `rpa bench` times it; flushing is outside the timed region).
// --simd=NAME runs the kernel on a narrower Highway target (AVX2, ...).
// BM_FastScaled: the same calls with k_scale 0.37 and v_scale 1.7 (the
// bench has no scales; quantised caches in serving have them), decode and
// mixed, bfloat16 and float8_e4m3fn KV, every thread, cold.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "harness/bench_ceilings.h"
#include "harness/data_seed.h"
#include "harness/problem.h"
#include "harness/upstream_cases.h"
#include "kernels/fast/fast_attention.h"
#include "kernels/fast/native_kv.h"

namespace rpa {
namespace {

constexpr const char* kShapes[] = {"decode_only", "prefill_only", "mixed"};
constexpr DType kQ[] = {DType::kFloat32, DType::kBFloat16};
constexpr DType kKv[] = {DType::kFloat32, DType::kBFloat16, DType::kFloat8E4M3FN};

// One shape's problem and its native KV cache, built once per argument set.
struct Inputs {
  Case c;
  ProblemBuffers buf;
  std::unique_ptr<fast::NativeKv> kv;
  std::vector<float> out;
};

Inputs& inputs(int shape, int q, int kv, bool scaled) {
  static std::map<std::tuple<int, int, int, bool>, std::unique_ptr<Inputs>> cache;
  auto& slot = cache[{shape, q, kv, scaled}];
  if (!slot) {
    slot = std::make_unique<Inputs>();
    Inputs& in = *slot;
    // The bench suite's case: 32 q / 8 KV heads, head_dim 128, page size 16.
    in.c = upstream_case("fast-bench", upstream_seq_lens(kShapes[shape]), 32, 8, 128, 16, kQ[0], kKv[kv]);
    if (q != 0) {
      in.c.call.q.dtype = kQ[q];
      in.c.q_content.values = seeded_values(kQ[q], UpstreamOptions{}.seed, num_elements(in.c.call.q.shape));
    }
    make_problem(in.c, in.buf);
    if (scaled) {
      in.buf.problem.has_k_scale = in.buf.problem.has_v_scale = 1;
      in.buf.problem.k_scale = 0.37f;
      in.buf.problem.v_scale = 1.7f;
    }
    in.kv = std::make_unique<fast::NativeKv>(fast::encode_kv(in.buf.problem));
    const rpa_problem& p = in.buf.problem;
    in.out.assign(size_t(p.num_tokens * p.num_q_heads * p.head_dim), 0.0f);
  }
  return *slot;
}

void TimeFast(benchmark::State& state, bool scaled) {
  Inputs& in = inputs(int(state.range(0)), int(state.range(1)), int(state.range(2)), scaled);
  rpa_problem p = in.buf.problem;
  p.num_threads = int(state.range(3));
  const bool cold = state.range(4) != 0;
  fast::attention(p, *in.kv, in.out.data(), nullptr);  // warm-up: thread pool, scratch
  for (auto _ : state) {
    if (cold) {
      state.PauseTiming();
      flush_caches();
      state.ResumeTiming();
    }
    const rpa_status st = fast::attention(p, *in.kv, in.out.data(), nullptr);
    if (st.code != RPA_OK) {
      state.SkipWithError(st.message ? st.message : "fast kernel failed");
      break;
    }
    benchmark::DoNotOptimize(in.out.data());
  }
  state.SetLabel(std::string(kShapes[state.range(0)]) + " q=" + std::string(dtype_name(kQ[state.range(1)])) +
                 " kv=" + std::string(dtype_name(kKv[state.range(2)])) + (scaled ? " scaled" : ""));
}
void BM_Fast(benchmark::State& state) { TimeFast(state, false); }
void BM_FastScaled(benchmark::State& state) { TimeFast(state, true); }

BENCHMARK(BM_Fast)
    ->ArgNames({"shape", "q", "kv", "threads", "cold"})
    ->ArgsProduct({{0, 1, 2}, {0, 1}, {0, 1, 2}, {0, 1}, {0, 1}})
    ->ComputeStatistics("min", [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); })
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_FastScaled)
    ->ArgNames({"shape", "q", "kv", "threads", "cold"})
    ->ArgsProduct({{0, 2}, {0, 1}, {1, 2}, {0}, {1}})
    ->ComputeStatistics("min", [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); })
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace rpa

// Google Benchmark's main, plus --simd=NAME (as `rpa --simd`): the kernel on
// a narrower Highway target, e.g. the AVX2 tiles timed on an AVX-512 CPU.
int main(int argc, char** argv) {
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--simd=", 0) != 0) {
      args.push_back(argv[i]);
      continue;
    }
    try {
      rpa::fast::limit_simd_target(a.substr(7));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fast_bench: %s\n", e.what());
      return 2;
    }
    std::fprintf(stderr, "fast_bench: SIMD code limited to %s\n", rpa::fast::simd_target());
  }
  int n = int(args.size());
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
