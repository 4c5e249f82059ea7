// Runs the bench suite: builds the upstream shapes as cases, times each implementation, and formats the report.
#include "harness/bench_suite.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string_view>

#include "harness/data_seed.h"
#include "harness/impls.h"
#include "harness/problem.h"
#include "harness/upstream_cases.h"
#include "kernels/fast/fast_attention.h"
#include "kernels/fast/native_kv.h"
#include "kernels/fast/thread_pool.h"
#include "oracle/py_error.h"

namespace rpa {
namespace {

using Clock = std::chrono::steady_clock;

// The upstream test file's shapes (tests/pallas/tpu_ragged_paged_attention_test.py
// at cec06d116c: test_ragged_paged_attention_{decode_only,prefill_only,mixed}):
// 32 q heads, 8 KV heads, head_dim 128, page size 16, 1000 pages.
struct Shape {
  const char* name;
  const char* upstream;
};
constexpr Shape kShapes[] = {{"decode", "decode_only"}, {"prefill", "prefill_only"}, {"mixed", "mixed"}};
constexpr int64_t kQHeads = 32, kKvHeads = 8, kHeadDim = 128, kPageSize = 16;
constexpr DType kQDtypes[] = {DType::kFloat32, DType::kBFloat16};
constexpr DType kKvDtypes[] = {DType::kFloat32, DType::kBFloat16, DType::kFloat8E4M3FN};

struct Work {
  double flops = 0;     // 4 * head_dim per unmasked score entry, every q head
  double kv_bytes = 0;  // K and V of every key of every sequence, in the KV dtype
};

Work work_of(const SeqLens& lens, DType kv) {
  Work w;
  for (const auto& [q_len, kv_len] : lens) {
    // Causal, aligned to the end: row t attends kv_len - q_len + t + 1 keys.
    double entries = 0;
    for (int64_t t = 0; t < q_len; ++t) entries += double(std::min(kv_len, std::max<int64_t>(0, kv_len - q_len + t + 1)));
    w.flops += entries * kQHeads * 4.0 * kHeadDim;
    w.kv_bytes += double(kv_len) * 2 * kKvHeads * kHeadDim * fast::native_elem_bytes(kv);
  }
  return w;
}

bool wanted(const std::vector<std::string>& filter, std::string_view value) {
  return filter.empty() || std::find(filter.begin(), filter.end(), value) != filter.end();
}

template <size_t N>
std::vector<std::string> dtype_names(const DType (&dts)[N]) {
  std::vector<std::string> v;
  for (DType d : dts) v.emplace_back(dtype_name(d));
  return v;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// "shape q/kv", how notes name a row.
std::string row_label(const char* shape, DType q, DType kv) {
  return std::string(shape) + " " + std::string(dtype_name(q)) + "/" + std::string(dtype_name(kv));
}

// A row's share of each ceiling.
void set_fractions(BenchRow& r, const Ceilings& c) {
  r.fma_fraction = c.fma_gflops > 0 ? r.gflops / c.fma_gflops : 0;
  r.stream_fraction = c.stream_gbs > 0 ? r.gbs / c.stream_gbs : 0;
}

BenchRow make_row(const char* impl, const char* shape, DType q, DType kv, const std::vector<double>& times,
                  const Work& w, const Ceilings& c) {
  BenchRow r;
  r.impl = impl;
  r.shape = shape;
  r.q_dtype = std::string(dtype_name(q));
  r.kv_dtype = std::string(dtype_name(kv));
  r.median_s = median(times);
  r.repeats = int(times.size());
  r.gflops = w.flops / r.median_s * 1e-9;
  r.gbs = w.kv_bytes / r.median_s * 1e-9;
  set_fractions(r, c);
  return r;
}

// Times an implementation through the harness registry (what `rpa run-case
// --impl NAME` runs, its case-to-buffers work included).
bool time_impl(const std::string& name, const Case& c, const ImplOptions& opt, int repeats,
               std::vector<double>& times, std::string& why) {
  const ImplSpec* spec = find_implementation(name);
  if (spec == nullptr) {
    why = "implementation '" + name + "' is not registered";
    return false;
  }
  try {
    for (int i = 0; i < repeats; ++i) {
      flush_caches();
      const auto t0 = Clock::now();
      const ImplOutput out = spec->run(c, opt);
      times.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
      if (out.values.empty()) throw std::runtime_error("no output");
    }
  } catch (const PyError& e) {
    why = name + " raised " + e.cls() + ": " + e.message();
    return false;
  } catch (const std::exception& e) {
    why = name + " failed: " + e.what();
    return false;
  }
  return true;
}

// A KV dtype's pages, shared by the shapes that have the same kv_lens (the
// upstream shapes all do): drawn once (about 2 s each) and encoded once
// into the fast kernel's native storage, as a server holds its cache. The
// encoding is shared, so the calls built on it outlive a replacement.
struct KvPages {
  std::vector<float> values;
  std::shared_ptr<const fast::NativeKv> native;
};

// The fast kernel's call on one case, ready to time on the native cache as
// a server calls it: the case's buffers, the cache, and one warm-up call made
// (its status in `st`). Built once per case, however many rounds time it.
struct FastCall {
  ProblemBuffers buf;
  std::shared_ptr<const fast::NativeKv> kv;
  std::vector<float> out;
  rpa_status st{RPA_OK, nullptr, nullptr};
};

// `c` was built on `pages` (its KV contents are pages.values).
void prepare_fast(const Case& c, int threads, KvPages& pages, FastCall& f) {
  // The kernel reads the native cache only (p.kv_pages is not read): the
  // float pages are materialised only to encode it, and then dropped, as a
  // shape's calls are all held at once.
  const bool encode = !pages.native;
  make_problem(c, f.buf, /*with_kv_pages=*/encode);
  rpa_problem& p = f.buf.problem;
  p.num_threads = threads;
  if (encode) pages.native = std::make_shared<const fast::NativeKv>(fast::encode_kv(p));
  f.kv = pages.native;
  f.buf.kv_pages = std::vector<float>();
  p.kv_pages = nullptr;
  f.out.resize(size_t(p.num_tokens * p.num_q_heads * p.head_dim));
  f.st = fast::attention(p, *f.kv, f.out.data(), nullptr);
}

// Appends `repeats` timed calls to `times`; false (with why) once a call fails.
bool time_fast(FastCall& f, int repeats, std::vector<double>& times, std::string& why) {
  for (int i = 0; i < repeats && f.st.code == RPA_OK; ++i) {
    flush_caches();
    const auto t0 = Clock::now();
    f.st = fast::attention(f.buf.problem, *f.kv, f.out.data(), nullptr);
    times.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  if (f.st.code == RPA_OK) return true;
  why = f.st.message ? f.st.message : "";
  return false;
}

}  // namespace

const std::vector<std::string>& bench_shapes() {
  static const std::vector<std::string> v = [] {
    std::vector<std::string> names;
    for (const Shape& s : kShapes) names.emplace_back(s.name);
    return names;
  }();
  return v;
}
const std::vector<std::string>& bench_impls() {
  static const std::vector<std::string> v{"fast", "reference", "tiled"};
  return v;
}
const std::vector<std::string>& bench_q_dtypes() {
  static const std::vector<std::string> v = dtype_names(kQDtypes);
  return v;
}
const std::vector<std::string>& bench_kv_dtypes() {
  static const std::vector<std::string> v = dtype_names(kKvDtypes);
  return v;
}

BenchReport run_bench(const BenchOptions& o) {
  BenchReport rep;
  rep.ceilings = measure_ceilings(o.threads, o.quick);
  const int threads = rep.ceilings.threads;
  rep.notes.push_back(std::string("SIMD target: ") + fast::simd_target() + "; ceilings on " + ceilings_target());
  // Medians over enough calls that a burst of load from elsewhere on the
  // machine (seconds long on shared virtual machines) moves them little.
  const int fast_repeats = o.repeats > 0 ? o.repeats : (o.quick ? 15 : 21);
  // The reference and tiled rows take seconds per call: fewer repeats, and
  // with --quick only the "mixed" shape (the one the speed-up target names)
  // and two of them - a quick run's 36 such calls were over half of its
  // time on a guest whose page faults are slow (reference 0.7-0.8 s, tiled
  // 1.4-1.7 s a call), and the ratios they serve have wide margins.
  const int slow_repeats = o.quick ? 2 : 3;
  ImplOptions impl_opt;
  impl_opt.threads = threads;

  std::vector<DType> qs;  // the q dtypes asked for, in row order
  for (DType q : kQDtypes)
    if (wanted(o.q_dtypes, dtype_name(q))) qs.push_back(q);
  // KV contents depend only on the KV dtype and kv_lens, which every
  // upstream shape shares: drawn and encoded once per KV dtype.
  std::map<DType, KvPages> kv_pages;
  std::vector<int64_t> pages_kv_lens;  // the kv_lens kv_pages hold pages for
  // A row's cases and samples, kept until its last window of fast calls.
  struct Entry {
    DType q = DType::kFloat32, kv = DType::kFloat32;
    Work w;
    Case c;
    FastCall fast;
    bool fast_ok = false;
    std::vector<double> times;
    std::string why;
    std::vector<BenchRow> slow_rows;
  };
  struct ShapeRows {
    const Shape* shape = nullptr;
    std::vector<std::unique_ptr<Entry>> entries;
    int later_windows = 0;  // windows of its fast calls still to come after its own phase
    int per_window = 0;     // calls per row in each of them
  };
  std::vector<const Shape*> shapes;
  for (const Shape& shape : kShapes)
    if (wanted(o.shapes, shape.name)) shapes.push_back(&shape);
  std::vector<ShapeRows> done_shapes;  // shapes whose own phase ran, in order
  const bool fast_wanted = wanted(o.impls, "fast");
  // One call of every row of `sr` a round, n rounds.
  const auto rounds = [&](ShapeRows& sr, int n) {
    for (int i = 0; i < n; ++i)
      for (auto& e : sr.entries)
        if (e->fast_ok) e->fast_ok = time_fast(e->fast, 1, e->times, e->why);
  };
  // A shape's rows once its last window ran: fast first, then its slow rows.
  const auto emit = [&](ShapeRows& sr) {
    const size_t shape_rows_at = rep.rows.size();
    for (auto& e : sr.entries) {
      if (e->fast_ok) {
        rep.rows.push_back(make_row("fast", sr.shape->name, e->q, e->kv, e->times, e->w, rep.ceilings));
      } else if (fast_wanted) {
        rep.notes.push_back("fast " + row_label(sr.shape->name, e->q, e->kv) + " failed: " + e->why);
      }
      rep.rows.insert(rep.rows.end(), e->slow_rows.begin(), e->slow_rows.end());
    }
    sr.entries.clear();
    if (o.progress && rep.rows.size() > shape_rows_at)
      o.progress(bench_table(
          {rep.ceilings, std::vector<BenchRow>(rep.rows.begin() + std::ptrdiff_t(shape_rows_at), rep.rows.end()), {}}));
  };
  for (size_t si = 0; si < shapes.size(); ++si) {
    const Shape& shape = *shapes[si];
    const SeqLens lens = upstream_seq_lens(shape.upstream);
    std::vector<int64_t> kv_lens;
    for (const auto& [q_len, kv_len] : lens) kv_lens.push_back(kv_len);
    if (kv_lens != pages_kv_lens) {
      kv_pages.clear();
      pages_kv_lens = kv_lens;
    }
    // This shape's cases in row order (KV dtype, then q dtype).
    ShapeRows sr;
    sr.shape = &shape;
    std::vector<std::unique_ptr<Entry>>& entries = sr.entries;
    for (DType kv : kKvDtypes) {
      if (!wanted(o.kv_dtypes, dtype_name(kv))) continue;
      const Work w = work_of(lens, kv);
      KvPages& pages = kv_pages[kv];
      UpstreamOptions drawn;
      if (!pages.values.empty()) drawn.kv_values = &pages.values;
      Case base = upstream_case(std::string("bench-") + shape.name, lens, kQHeads, kKvHeads, kHeadDim, kPageSize,
                                kQDtypes[0], kv, drawn);
      if (pages.values.empty()) pages.values = base.kv_content.values;
      for (size_t i = 0; i < qs.size(); ++i) {
        const DType q = qs[i];
        auto e = std::make_unique<Entry>();
        e->q = q;
        e->kv = kv;
        e->w = w;
        // The last entry takes the case itself, the others a copy (a copy
        // of the pages is half a second on a guest whose page faults are slow).
        e->c = i + 1 < qs.size() ? base : std::move(base);
        if (q != kQDtypes[0]) {  // the same case with q drawn in another dtype (upstream_case's q seed)
          e->c.call.q.dtype = q;
          e->c.q_content.values = seeded_values(q, UpstreamOptions{}.seed, num_elements(e->c.call.q.shape));
        }
        entries.push_back(std::move(e));
      }
    }
    if (fast_wanted)
      for (auto& e : entries) {
        prepare_fast(e->c, threads, kv_pages[e->kv], e->fast);
        e->fast_ok = true;
      }
    // The fast calls of the shape's rows are timed in rounds, one call of
    // every row a round, rather than row after row: a burst of load from
    // elsewhere on a shared machine (seconds long) then lands on a few
    // rounds - a few samples of every row, which their medians pass over -
    // instead of on every sample of a few rows. Where slow rows are timed,
    // half the rounds come before them and half after, so the two sides of
    // the speed-up ratio are timed over the same stretch of time. The
    // rounds are also spread over the run: a shape's calls are split
    // evenly between its own phase and one window after each later
    // shape's, so a slow stretch of the machine (one quick run timed the
    // decode rows at 0.76 ms, both q dtypes, against 0.54-0.70 ms in the
    // runs around it) holds a third of the decode's calls, not all.
    sr.later_windows = int(shapes.size() - 1 - si);
    sr.per_window = fast_repeats / (1 + sr.later_windows);
    const int own = fast_repeats - sr.per_window * sr.later_windows;
    const bool slow_here = !(o.quick && std::strcmp(shape.name, "mixed") != 0) &&
                           (wanted(o.impls, "reference") || wanted(o.impls, "tiled"));
    const int fast_first = slow_here ? (own + 1) / 2 : own;
    rounds(sr, fast_first);
    for (auto& e : entries)
      for (const auto& [impl, name] : {std::pair{"reference", "oracle"}, std::pair{"tiled", "tiled"}}) {
        if (!slow_here || !wanted(o.impls, impl)) continue;
        std::vector<double> t;
        std::string why;
        if (time_impl(name, e->c, impl_opt, slow_repeats, t, why)) {
          e->slow_rows.push_back(make_row(impl, shape.name, e->q, e->kv, t, e->w, rep.ceilings));
        } else {
          rep.notes.push_back(std::string(impl) + " " + row_label(shape.name, e->q, e->kv) + " skipped: " + why);
        }
      }
    rounds(sr, own - fast_first);
    for (auto& e : entries) e->c = Case();  // the pages' values: only the slow rows read them
    // The later windows of the shapes before this one.
    for (ShapeRows& prev : done_shapes)
      if (prev.later_windows > 0) {
        rounds(prev, prev.per_window);
        if (--prev.later_windows == 0) emit(prev);
      }
    done_shapes.push_back(std::move(sr));
    if (done_shapes.back().later_windows == 0) emit(done_shapes.back());
  }
  // The ceilings again after the rows: a shared virtual machine can lend
  // less than its cores for a while (one quick run read the FMA ceiling at
  // 175 GFLOP/s against the 340 its two cores give), and a ceiling read low
  // overstates every fraction. The larger reading of each is the machine's;
  // the rows' fractions are recomputed from it.
  const Ceilings before = rep.ceilings, after = measure_ceilings(o.threads, o.quick);
  rep.ceilings = larger_of(before, after);
  for (BenchRow& row : rep.rows) set_fractions(row, rep.ceilings);
  char line[256];
  std::snprintf(line, sizeof line,
                "ceilings before / after the rows: FMA %.1f / %.1f GFLOP/s, stream %.1f / %.1f GB/s (buffer %lld MiB, "
                "last-level cache %lld MiB); fractions are of the larger",
                before.fma_gflops, after.fma_gflops, before.stream_gbs, after.stream_gbs, stream_buffer_bytes() >> 20,
                last_level_cache_bytes() >> 20);
  rep.notes.push_back(line);
  rep.ceilings_rose = rep.ceilings.fma_gflops > before.fma_gflops * 1.02 ||
                      rep.ceilings.stream_gbs > before.stream_gbs * 1.02;
  return rep;
}

std::string bench_json(const BenchReport& r) {
  nlohmann::ordered_json j;
  j["ceilings"] = {{"fma_gflops", r.ceilings.fma_gflops},
                   {"stream_gbs", r.ceilings.stream_gbs},
                   {"threads", r.ceilings.threads}};
  j["rows"] = nlohmann::ordered_json::array();
  for (const BenchRow& row : r.rows) {
    j["rows"].push_back({{"impl", row.impl},
                         {"shape", row.shape},
                         {"q_dtype", row.q_dtype},
                         {"kv_dtype", row.kv_dtype},
                         {"median_s", row.median_s},
                         {"gflops", row.gflops},
                         {"gbs", row.gbs},
                         {"fma_fraction", row.fma_fraction},
                         {"stream_fraction", row.stream_fraction}});
  }
  return j.dump() + "\n";
}

std::string bench_table(const BenchReport& r) {
  std::string s;
  char line[256];
  for (const BenchRow& row : r.rows) {
    std::snprintf(line, sizeof line, "%-9s %-7s q=%-8s kv=%-13s %10.3f ms %8.1f GFLOP/s %7.1f GB/s  fma %5.1f%%  stream %5.1f%%  (n=%d)\n",
                  row.impl.c_str(), row.shape.c_str(), row.q_dtype.c_str(), row.kv_dtype.c_str(), row.median_s * 1e3,
                  row.gflops, row.gbs, 100 * row.fma_fraction, 100 * row.stream_fraction, row.repeats);
    s += line;
  }
  return s;
}

}  // namespace rpa
