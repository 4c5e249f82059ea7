// The fast kernel's SIMD code compiled for each Highway target (AVX-512, AVX2, portable), with run-time dispatch.
#ifndef HWY_DISABLED_TARGETS
// SSSE3 and SSE4 add compile time but nothing on machines this runs on:
// they fall back to the portable target.
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4)
#endif

#include "kernels/fast/simd_attention.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "kernels/fast/thread_pool.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/fast/simd_attention.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"
#include "kernels/fast/convert-inl.h"
#include "kernels/fast/tiles-inl.h"
#include "kernels/fast/bf16_tile-inl.h"
#include "kernels/fast/bf16_group-inl.h"
#include "kernels/fast/avx2_group-inl.h"

HWY_BEFORE_NAMESPACE();
namespace rpa::fast::HWY_NAMESPACE {

// Runs one work item of the plan; `first_streamed` and `ahead` as GroupBf16 takes them.
inline void RunItem(const Plan& plan, const WorkItem& w, Scratch& sc, [[maybe_unused]] bool first_streamed,
                    [[maybe_unused]] ItemAhead& ahead) {
  const KernelCtx& c = plan.ctx;
  const SeqPlan& s = plan.seqs[w.seq];
  const int64_t N = int64_t(hn::Lanes(DF()));
  if (w.group) {
#if HWY_TARGET != HWY_SCALAR
    float* partial = w.partial >= 0 ? plan.partials.data() + w.partial : nullptr;
    if (RunBf16Group(c, s, w.kv_head, w.heads, w.key0, w.key1, partial, sc, first_streamed, ahead)) return;
    if (RunAvx2Group(c, s, w.kv_head, w.heads, w.key0, w.key1, partial, sc)) return;
    if (c.head_dim % N != 0) return TileGroup<DType::kFloat32>(c, s, w.kv_head, w.heads, w.key0, w.key1, partial, sc, false);
    switch (c.kv_dtype) {
#define RPA_FAST_GROUP(T) return TileGroup<T>(c, s, w.kv_head, w.heads, w.key0, w.key1, partial, sc, true)
      case DType::kFloat32: RPA_FAST_GROUP(DType::kFloat32);
      case DType::kBFloat16: RPA_FAST_GROUP(DType::kBFloat16);
      case DType::kFloat16: RPA_FAST_GROUP(DType::kFloat16);
      case DType::kFloat8E4M3FN: RPA_FAST_GROUP(DType::kFloat8E4M3FN);
      case DType::kFloat8E5M2: RPA_FAST_GROUP(DType::kFloat8E5M2);
      default: RPA_FAST_GROUP(DType::kInt8);  // int8, int4 (a byte each)
#undef RPA_FAST_GROUP
    }
#endif
  }
  if (RunBf16Tile(c, s, w.kv_head, w.row0, w.row1, sc)) return;
  const int64_t rv = (w.row1 - w.row0 + N - 1) / N;
  if (rv <= 1) return TileB<1>(c, s, w.kv_head, w.row0, w.row1, sc);
  if (rv <= 2) return TileB<2>(c, s, w.kv_head, w.row0, w.row1, sc);
  if (rv <= 4) return TileB<4>(c, s, w.kv_head, w.row0, w.row1, sc);
  return TileB<int(kMaxTileRowVectors)>(c, s, w.kv_head, w.row0, w.row1, sc);
}

int64_t TileRowsOfTarget(const KernelCtx* c) {
  const int64_t N = int64_t(hn::Lanes(DF()));
  return KvReadInPlace(*c) || Bf16TileApplies(*c) ? 4 * N : int(kMaxTileRowVectors) * N;
}

int64_t LanesOfTarget() { return int64_t(hn::Lanes(DF())); }
const char* NameOfTarget() { return hwy::TargetName(HWY_TARGET); }
int64_t GroupRowsOfTarget() { return GroupRowsMax(); }

void RunPlan(const Plan* plan, int threads) {
  const KernelCtx& c = plan->ctx;
  const size_t N = hn::Lanes(DF());
  const bool in_place = KvReadInPlace(c);
  std::atomic<size_t> next{0};
  const auto& items = plan->items;
  ThreadPool::global().run(threads, [&](int) {
    // Kept per thread across calls: fresh buffers every call would page-fault.
    thread_local Scratch sc;
    if (sc.lanes != N || sc.head_dim != c.head_dim) sc.init(N, c.head_dim, in_place);
    sc.in_place = in_place;
    // An item may claim the thread's next one before it ends (ItemAhead).
    bool streamed = false;
    for (size_t i = next.fetch_add(1); i < items.size();) {
      ItemAhead ahead{.plan = plan, .next = &next};
      RunItem(*plan, items[i], sc, streamed, ahead);
      streamed = ahead.streamed;
      i = ahead.claimed != ItemAhead::kNone ? ahead.claimed : next.fetch_add(1);
    }
  });
}

void ConvertRowForTest(DType kv, DType q, bool scaled, float scale, const uint8_t* src, int64_t n, float* dst) {
  const size_t N = hn::Lanes(DF());
  const size_t np = (size_t(n) + N - 1) / N * N;
  auto buf = hwy::AllocateAligned<float>(np + N);
  ConverterFor(kv)(src, n, np, scaled, scale, q, buf.get());
  for (int64_t i = 0; i < n; ++i) dst[i] = buf[i];
}

bool Fp8WordsForTest(DType kv, bool scaled, float scale, const uint8_t* src, uint16_t* words) {
#if HWY_TARGET != HWY_SCALAR
  return Fp8WordsOfTarget(kv, scaled, scale, src, words);
#else
  (void)kv, (void)scaled, (void)scale, (void)src, (void)words;
  return false;
#endif
}

bool Avx2KvRowForTestOfTarget(DType kv, DType q, bool scaled, float scale, bool finite_kv, const uint8_t* src,
                              float* dst) {
  return Avx2KvRowForTest(kv, q, scaled, scale, finite_kv, src, dst);
}

// dst[i] = f(vector of src)[i] for n floats, a vector at a time; the last
// vector's lanes past n read 0 and are not written.
template <class F>
void MapVectors(const float* src, int64_t n, float* dst, F f) {
  const DF df;
  const size_t N = hn::Lanes(df);
  HWY_ALIGN float tmp[hn::MaxLanes(df)];
  for (int64_t i = 0; i < n; i += int64_t(N)) {
    for (size_t k = 0; k < N; ++k) tmp[k] = i + int64_t(k) < n ? src[i + int64_t(k)] : 0.0f;
    hn::Store(f(df, hn::Load(df, tmp)), df, tmp);
    for (size_t k = 0; k < N && i + int64_t(k) < n; ++k) dst[i + int64_t(k)] = tmp[k];
  }
}

void WeightExpForTest(const float* x, int64_t n, float* dst) {
  MapVectors(x, n, dst, [](DF df, VF v) { return WeightExp(df, v); });
}

void RoundValues(DType q, const float* src, int64_t n, float* dst) {
  MapVectors(src, n, dst, [q](DF df, VF v) { return RoundToQ(df, q, v); });
}

uint32_t MaxAbsBits(const float* p, int64_t n) {
  const DF df;
  const hn::RebindToUnsigned<DF> du;
  const int64_t N = int64_t(hn::Lanes(df));
  const auto magnitude = hn::Set(du, 0x7FFFFFFFu);
  auto m = hn::Zero(du);
  int64_t i = 0;
  for (; i + N <= n; i += N) m = hn::Max(m, hn::And(hn::BitCast(du, hn::LoadU(df, p + i)), magnitude));
  uint32_t r = hn::GetLane(hn::MaxOfLanes(du, m));
  for (; i < n; ++i) {
    uint32_t u;
    std::memcpy(&u, p + i, 4);
    r = std::max(r, u & 0x7FFFFFFFu);
  }
  return r;
}

}  // namespace rpa::fast::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace rpa::fast {

HWY_EXPORT(LanesOfTarget);
HWY_EXPORT(NameOfTarget);
HWY_EXPORT(GroupRowsOfTarget);
HWY_EXPORT(TileRowsOfTarget);
HWY_EXPORT(RunPlan);
HWY_EXPORT(ConvertRowForTest);
HWY_EXPORT(Fp8WordsForTest);
HWY_EXPORT(Avx2KvRowForTestOfTarget);
HWY_EXPORT(RoundValues);
HWY_EXPORT(WeightExpForTest);
HWY_EXPORT(MaxAbsBits);

int64_t simd_lanes() { return HWY_DYNAMIC_DISPATCH(LanesOfTarget)(); }
int64_t group_rows() { return HWY_DYNAMIC_DISPATCH(GroupRowsOfTarget)(); }
int64_t tile_rows(const KernelCtx& c) { return HWY_DYNAMIC_DISPATCH(TileRowsOfTarget)(&c); }
const char* simd_target_name() { return HWY_DYNAMIC_DISPATCH(NameOfTarget)(); }
void run_plan(const Plan& plan, int threads) { HWY_DYNAMIC_DISPATCH(RunPlan)(&plan, threads); }
void convert_row_for_test(DType kv, DType q, bool scaled, float scale, const uint8_t* src, int64_t n, float* dst) {
  HWY_DYNAMIC_DISPATCH(ConvertRowForTest)(kv, q, scaled, scale, src, n, dst);
}
bool fp8_words_for_test(DType kv, bool scaled, float scale, const uint8_t* src, uint16_t* words) {
  return HWY_DYNAMIC_DISPATCH(Fp8WordsForTest)(kv, scaled, scale, src, words);
}
bool avx2_kv_row_for_test(DType kv, DType q, bool scaled, float scale, bool finite_kv, const uint8_t* src,
                          float* dst) {
  return HWY_DYNAMIC_DISPATCH(Avx2KvRowForTestOfTarget)(kv, q, scaled, scale, finite_kv, src, dst);
}
void weight_exp_for_test(const float* x, int64_t n, float* dst) { HWY_DYNAMIC_DISPATCH(WeightExpForTest)(x, n, dst); }
uint32_t max_abs_bits(const float* p, int64_t n) { return HWY_DYNAMIC_DISPATCH(MaxAbsBits)(p, n); }
void round_values(DType q, const float* src, int64_t n, float* dst) {
  HWY_DYNAMIC_DISPATCH(RoundValues)(q, src, n, dst);
}

}  // namespace rpa::fast
#endif  // HWY_ONCE
