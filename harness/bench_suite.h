// The suite behind `rpa bench`: the upstream shapes timed for the reference, tiled and fast implementations.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "harness/bench_ceilings.h"

namespace rpa {

struct BenchRow {
  std::string impl;   // "reference" | "tiled" | "fast"
  std::string shape;  // "decode" | "prefill" | "mixed"
  std::string q_dtype, kv_dtype;
  double median_s = 0;
  double gflops = 0;  // unmasked score entries x 4 x head_dim flops, per second
  double gbs = 0;     // KV bytes the call must read (every key of every sequence, K and V), per second
  double fma_fraction = 0, stream_fraction = 0;  // of the measured ceilings
  int repeats = 0;
};

struct BenchOptions {
  bool quick = false;  // whole run under two minutes on a 2-core machine
  int repeats = 0;     // timed calls per fast row (0: 21, or 15 with quick); reference / tiled use 3
  int threads = 0;     // 0: every hardware thread
  std::function<void(const std::string&)> progress;  // the rows of each finished shape (optional)
  // Filters: only rows whose field is listed (empty: every value).
  std::vector<std::string> shapes, impls, q_dtypes, kv_dtypes;
};

// The values each filter of BenchOptions takes, for the CLI's checks.
const std::vector<std::string>& bench_shapes();
const std::vector<std::string>& bench_impls();
const std::vector<std::string>& bench_q_dtypes();
const std::vector<std::string>& bench_kv_dtypes();

struct BenchReport {
  Ceilings ceilings;
  std::vector<BenchRow> rows;
  std::vector<std::string> notes;  // rows skipped and why, the SIMD target, ...
  // The ceilings read after the rows were higher than before (by over 2%):
  // the fractions printed as progress are of the lower, earlier reading.
  bool ceilings_rose = false;
};

BenchReport run_bench(const BenchOptions& options);

// The contract of `rpa bench --json`: {"ceilings": {...}, "rows": [...]}.
std::string bench_json(const BenchReport& report);
// A human-readable table of the same.
std::string bench_table(const BenchReport& report);

}  // namespace rpa
