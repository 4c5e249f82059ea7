// What the tiled emulation is told beyond the rpa_problem: the kernel entry's head blocking and block sizes, and run options.
#pragma once

#include <cstdint>
#include <functional>

namespace rpa::tiled {

// Identifies one KV block as the kernel's DMA descriptors do
// (create_kv_async_copy_descriptors, kernel.py:338-356).
struct KvBlockId {
  int64_t heads_blk = 0;
  int64_t seq = 0;
  int64_t kv_blk = 0;
  friend bool operator==(const KvBlockId&, const KvBlockId&) = default;
};

struct TiledConfig {
  // get_min_heads_per_blk (kernel.py:683-715) as ragged_paged_attention
  // computed them (kernel.py:801-803). Required: the kernels layer does not
  // reimplement validation (one source of truth: oracle/validate.h).
  int64_t num_q_heads_per_blk = 0;
  int64_t num_combined_kv_heads_per_blk = 0;
  // num_kv_pages_per_blk / num_q_per_blk (kernel.py:804-816); 0 takes the
  // rpa_problem's num_kv_pages_per_block / num_queries_per_block.
  int64_t num_kv_pages_per_blk = 0;
  int64_t num_q_per_blk = 0;
  // Raise AssertionError (rpa_status RPA_ERR_REJECTED) where the TPU kernel's
  // trace asserts, instead of computing anyway with a trace-assertion
  // diagnostic.
  bool strict_trace_asserts = false;
  // false: walk the grid and run the DMA protocol with its checks, but skip
  // the arithmetic (schedule audits, fast property tests); `out` is untouched.
  bool compute = true;
  // Refuse (RPA_ERR_UNSUPPORTED) once the emulation has done this many
  // multiply-adds: index data the kernel does not validate (a kv_len of 2^31)
  // would otherwise run for hours.
  double max_multiply_adds = 4e10;
  // Called for every KV block the kernel consumes (the wait at
  // kernel.py:613-616), in schedule order; for tests and audits.
  std::function<void(const KvBlockId&)> on_consume;
};

}  // namespace rpa::tiled
