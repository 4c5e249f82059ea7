// The machine's own ceilings for `rpa bench`: a float32 FMA loop and a read stream over all cores, measured in-process.
#pragma once

namespace rpa {

struct Ceilings {
  double fma_gflops = 0;  // float32 FMA throughput (2 flops per lane per FMA), all threads
  double stream_gbs = 0;  // read bandwidth from memory (a buffer of stream_buffer_bytes()), all threads
  int threads = 0;
};

// Best of a few runs of each; `quick` shortens them. `threads` <= 0: every hardware thread.
Ceilings measure_ceilings(int threads, bool quick);

// Evicts every core's caches (all threads read a buffer larger than the
// last-level cache), so a timed call reads its KV from memory as a serving
// step does.
void flush_caches();

// The last-level cache the OS reports (L3, else L2; 32 MiB where it reports
// neither), and the buffers sized from it: the stream ceiling reads
// max(256 MiB, 4x it), flush_caches max(96 MiB, 3x it) - a fixed size would
// sit inside the 260 MiB L3 of some server parts and measure the cache.
long long last_level_cache_bytes();
long long stream_buffer_bytes();
long long flush_buffer_bytes();

// Each ceiling the larger of the two readings.
Ceilings larger_of(const Ceilings& a, const Ceilings& b);

// The SIMD target the ceilings ran on.
const char* ceilings_target();

}  // namespace rpa
