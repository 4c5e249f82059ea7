// Measures the bench's machine ceilings: a float32 FMA loop and a read stream, per Highway target, on every thread.
#include "harness/bench_ceilings.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include <unistd.h>

#include "kernels/fast/native_kv.h"
#include "kernels/fast/thread_pool.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "harness/bench_ceilings.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace rpa::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// kChains independent FMA chains per thread. The ceiling is the best of
// several chain counts (kFmaChains): enough chains to cover latency x pipes
// (8 on current x86 cores), but no more than the target's registers hold
// beside the two operands - on AVX2's 16 registers, sixteen chains kept
// three accumulators on the stack and the loop measured 114 GFLOP/s on a
// Zen 3 pair of cores that twelve chains drive at 200.
template <int kChains>
double FmaFlopsOf(int64_t iterations, float* sink) {
  const hn::ScalableTag<float> df;
  using V = hn::Vec<decltype(df)>;
  V acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = hn::Set(df, 0.001f * float(i));
  const V b = hn::Set(df, 0.9999f), c = hn::Set(df, 1e-4f);
  for (int64_t it = 0; it < iterations; ++it) {
    for (int i = 0; i < kChains; ++i) acc[i] = hn::MulAdd(acc[i], b, c);
  }
  V s = acc[0];
  for (int i = 1; i < kChains; ++i) s = hn::Add(s, acc[i]);
  *sink = hn::GetLane(hn::SumOfLanes(df, s));
  return double(iterations) * double(kChains) * double(hn::Lanes(df)) * 2.0;
}

// The flops FmaFlopsOf<chains> did; chains one of kFmaChains.
double FmaFlops(int64_t iterations, float* sink, int chains) {
  switch (chains) {
    case 8: return FmaFlopsOf<8>(iterations, sink);
    case 12: return FmaFlopsOf<12>(iterations, sink);
    default: return FmaFlopsOf<16>(iterations, sink);
  }
}

// Sums n floats (n a multiple of 4 vectors) with four chains.
float ReadSum(const float* p, int64_t n) {
  const hn::ScalableTag<float> df;
  const int64_t N = int64_t(hn::Lanes(df));
  auto a0 = hn::Zero(df), a1 = a0, a2 = a0, a3 = a0;
  for (int64_t i = 0; i + 4 * N <= n; i += 4 * N) {
    a0 = hn::Add(a0, hn::Load(df, p + i));
    a1 = hn::Add(a1, hn::Load(df, p + i + N));
    a2 = hn::Add(a2, hn::Load(df, p + i + 2 * N));
    a3 = hn::Add(a3, hn::Load(df, p + i + 3 * N));
  }
  return hn::GetLane(hn::SumOfLanes(df, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3))));
}

const char* TargetName() { return hwy::TargetName(HWY_TARGET); }

}  // namespace rpa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace rpa {
HWY_EXPORT(FmaFlops);
HWY_EXPORT(ReadSum);
HWY_EXPORT(TargetName);

namespace {
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The chain counts FmaFlops runs; the FMA ceiling is the best of them.
constexpr int kFmaChains[] = {8, 12, 16};

volatile uint64_t g_flush_sink;  // keeps flush_caches' reads

// One buffer of stream_buffer_bytes() for the whole process: the stream
// ceiling reads all of it, flush_caches its first flush_buffer_bytes().
// Allocated and touched once - on a guest that reports a 508 MiB L3 it is
// 2 GiB, and faulting in fresh pages for each of the two ceiling readings
// plus a separate flush buffer took about 10 s of a quick run. On huge pages
// where the OS allows, as the fast kernel's KV cache (encode_kv): the same
// TLB reach for both sides of stream_fraction.
const float* big_buffer() {
  static const std::unique_ptr<float, void (*)(void*) noexcept> buf = [] {
    const int64_t floats = stream_buffer_bytes() / int64_t(sizeof(float));
    std::unique_ptr<float, void (*)(void*) noexcept> b(
        static_cast<float*>(fast::huge_page_alloc(size_t(floats) * sizeof(float))), fast::huge_page_free);
    const int n = fast::ThreadPool::hardware_threads();
    const int64_t per = (floats + n - 1) / n;
    fast::ThreadPool::global().run(n, [&](int w) {  // first touch by the thread that reads it
      std::fill(b.get() + std::min(floats, w * per), b.get() + std::min(floats, (w + 1) * per), 1.0f);
    });
    return b;
  }();
  return buf.get();
}
}  // namespace

long long last_level_cache_bytes() {
  static const long long bytes = [] {
    long v = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (v <= 0) v = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return v > 0 ? (long long)v : (32LL << 20);
  }();
  return bytes;
}
long long stream_buffer_bytes() { return std::max(256LL << 20, 4 * last_level_cache_bytes()) / 4096 * 4096; }
long long flush_buffer_bytes() { return std::max(96LL << 20, 3 * last_level_cache_bytes()) / 4096 * 4096; }

Ceilings larger_of(const Ceilings& a, const Ceilings& b) {
  Ceilings c = a;
  c.fma_gflops = std::max(a.fma_gflops, b.fma_gflops);
  c.stream_gbs = std::max(a.stream_gbs, b.stream_gbs);
  return c;
}

const char* ceilings_target() { return HWY_DYNAMIC_DISPATCH(TargetName)(); }

Ceilings measure_ceilings(int threads, bool quick) {
  auto& pool = fast::ThreadPool::global();
  Ceilings c;
  c.threads = threads > 0 ? threads : fast::ThreadPool::hardware_threads();
  const int n = c.threads;
  std::vector<float> sink(size_t(n) * 16);
  const int64_t iterations = quick ? 20'000'000 : 60'000'000;
  // Every thread busy for a while first: a pool thread just started may
  // share its core with the caller until the scheduler spreads them (tens
  // of milliseconds), which measured half the machine in one run of six.
  pool.run(n, [&](int w) { HWY_DYNAMIC_DISPATCH(FmaFlops)(iterations, &sink[size_t(w) * 16], 12); });
  for (const int chains : kFmaChains)
    for (int rep = 0; rep < 5; ++rep) {
      std::atomic<double> flops{0};
      const auto t0 = Clock::now();
      pool.run(n, [&](int w) {
        const double f = HWY_DYNAMIC_DISPATCH(FmaFlops)(iterations / 4, &sink[size_t(w) * 16], chains);
        double cur = flops.load();
        while (!flops.compare_exchange_weak(cur, cur + f)) {
        }
      });
      c.fma_gflops = std::max(c.fma_gflops, flops.load() / seconds_since(t0) * 1e-9);
    }

  const float* buf = big_buffer();
  const int64_t per = stream_buffer_bytes() / int64_t(sizeof(float)) / n / 64 * 64;
  for (int rep = 0; rep < (quick ? 3 : 6); ++rep) {
    const auto t0 = Clock::now();
    pool.run(n, [&](int w) { sink[size_t(w) * 16 + 1] = HWY_DYNAMIC_DISPATCH(ReadSum)(buf + w * per, per); });
    c.stream_gbs = std::max(c.stream_gbs, double(per) * n * sizeof(float) / seconds_since(t0) * 1e-9);
  }
  return c;
}

void flush_caches() {
  // Reads only: written junk would leave dirty lines that the timed call
  // would then pay to write back. Every pool thread reads a share, so each
  // core's private caches are evicted too (not just the caller's), and the
  // pool's threads are still polling when the timed call starts - as in a
  // serving loop, where calls follow each other; a sleeping worker's wake-up
  // (0.1-0.3 ms here) is not the kernel's time.
  const auto* junk = reinterpret_cast<const uint8_t*>(big_buffer());
  auto& pool = fast::ThreadPool::global();
  const int n = fast::ThreadPool::hardware_threads();
  const size_t per = size_t(flush_buffer_bytes()) / size_t(n) / 64 * 64;
  std::vector<uint64_t> sums(size_t(n) * 8, 0);  // a cache line apart
  pool.run(n, [&](int w) {
    uint64_t sum = 0;
    for (size_t i = size_t(w) * per; i < size_t(w + 1) * per; i += 64) sum += junk[i];
    sums[size_t(w) * 8] = sum;
  });
  uint64_t total = 0;
  for (int w = 0; w < n; ++w) total += sums[size_t(w) * 8];
  g_flush_sink = total;
}

}  // namespace rpa
#endif  // HWY_ONCE
