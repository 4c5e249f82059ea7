// Tests of the bench ceilings' buffer sizes (against the cache sizes the OS reports, read here) and of how two
// readings of the ceilings combine. No timing is asserted.
#include "harness/bench_ceilings.h"

#include <gtest/gtest.h>
#include <unistd.h>

namespace rpa {
namespace {

// The largest cache the OS reports, read independently of the harness.
long long largest_cache() {
  long long c = 0;
  for (int name : {_SC_LEVEL1_DCACHE_SIZE, _SC_LEVEL2_CACHE_SIZE, _SC_LEVEL3_CACHE_SIZE, _SC_LEVEL4_CACHE_SIZE}) {
    const long v = sysconf(name);
    if (v > c) c = v;
  }
  return c;
}

TEST(BenchCeilings, TheStreamAndFlushBuffersAreSeveralTimesTheLargestCache) {
  const long long cache = largest_cache();
  // The last level is at least as large as the L2 the OS reports.
  EXPECT_GT(last_level_cache_bytes(), 0);
  EXPECT_GE(last_level_cache_bytes(), (long long)sysconf(_SC_LEVEL2_CACHE_SIZE));
  // A stream or flush that fits in a cache would measure the cache.
  EXPECT_GE(stream_buffer_bytes(), 4 * cache - 4096);
  EXPECT_GE(flush_buffer_bytes(), 3 * cache - 4096);
  EXPECT_GE(stream_buffer_bytes(), 256LL << 20);
  EXPECT_GE(flush_buffer_bytes(), 96LL << 20);
  EXPECT_EQ(stream_buffer_bytes() % 4096, 0);
}

TEST(BenchCeilings, TwoReadingsCombineToTheLargerOfEach) {
  const Ceilings a{300.0, 20.0, 2}, b{170.0, 31.0, 2};
  const Ceilings c = larger_of(a, b);
  EXPECT_EQ(c.fma_gflops, 300.0);
  EXPECT_EQ(c.stream_gbs, 31.0);
  EXPECT_EQ(c.threads, 2);
  const Ceilings d = larger_of(b, a);
  EXPECT_EQ(d.fma_gflops, 300.0);
  EXPECT_EQ(d.stream_gbs, 31.0);
}

}  // namespace
}  // namespace rpa
