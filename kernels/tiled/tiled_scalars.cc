// Bounds-checked reads of the scalar-prefetch tables.
#include "kernels/tiled/tiled_scalars.h"

#include <string>

namespace rpa::tiled {
namespace {
std::string num(int64_t v) { return std::to_string(v); }
}  // namespace

int64_t ScalarTables::kv_len(int64_t seq) {
  if (seq < 0 || seq >= p_.max_num_seqs) {
    diags_.add(DiagKind::kOobKvLens, "kv_lens[" + num(seq) + "] read, but kv_lens has " + num(p_.max_num_seqs) +
                                         " entries (num_seqs " + num(p_.num_seqs) + "); read as 0");
    return 0;
  }
  return p_.kv_lens[seq];
}

int64_t ScalarTables::cu_q_len(int64_t i) {
  if (i < 0 || i > p_.max_num_seqs) {
    diags_.add(DiagKind::kOobCuQLens, "cu_q_lens[" + num(i) + "] read, but cu_q_lens has " + num(p_.max_num_seqs + 1) +
                                          " entries (num_seqs " + num(p_.num_seqs) + "); read as 0");
    return 0;
  }
  return p_.cu_q_lens[i];
}

int64_t ScalarTables::page_index(int64_t seq, int64_t page_idx) {
  if (seq < 0 || seq >= p_.max_num_seqs || page_idx < 0 || page_idx >= p_.pages_per_seq) {
    diags_.add(DiagKind::kOobPageIndices, "page_indices[" + num(seq) + ", " + num(page_idx) +
                                              "] read, but page_indices is [" + num(p_.max_num_seqs) + ", " +
                                              num(p_.pages_per_seq) + "]; read as 0");
    return 0;
  }
  return p_.page_indices[seq * p_.pages_per_seq + page_idx];
}

}  // namespace rpa::tiled
