// The kernel's scalar-prefetch tables (kv_lens, page_indices, cu_q_lens in SMEM) with every read bounds-checked.
#pragma once

#include <cstdint>

#include "kernels/tiled/tiled_diagnostics.h"
#include "rpa/rpa.h"

namespace rpa::tiled {

// The TPU reads SMEM without bounds checks; an index past the array reads
// whatever lies there. The emulation reports each such read (oob.* kinds)
// and reads 0 instead, so a bad table never crashes the harness.
class ScalarTables {
 public:
  ScalarTables(const rpa_problem& p, Diagnostics& diags) : p_(p), diags_(diags) {}

  int64_t kv_len(int64_t seq);                       // kv_lens_ref[seq]
  int64_t cu_q_len(int64_t i);                        // cu_q_lens_ref[i]
  int64_t page_index(int64_t seq, int64_t page_idx);  // page_indices_ref[seq, page_idx]
  int64_t num_seqs() const { return p_.num_seqs; }    // num_seqs_ref[0]

 private:
  const rpa_problem& p_;
  Diagnostics& diags_;
};

}  // namespace rpa::tiled
