// The machine's own ceilings for `rpa bench`: a float32 FMA loop and a read stream over all cores, measured in-process.
#pragma once

namespace rpa {

struct Ceilings {
  double fma_gflops = 0;  // float32 FMA throughput (2 flops per lane per FMA), all threads
  double stream_gbs = 0;  // read bandwidth from memory (a buffer 8x the last-level cache), all threads
  int threads = 0;
};

// Best of a few runs of each; `quick` shortens them. `threads` <= 0: every hardware thread.
Ceilings measure_ceilings(int threads, bool quick);

// Evicts every core's caches (all threads read a buffer larger than the
// last-level cache), so a timed call reads its KV from memory as a serving
// step does.
void flush_caches();

// The SIMD target the ceilings ran on.
const char* ceilings_target();

}  // namespace rpa
