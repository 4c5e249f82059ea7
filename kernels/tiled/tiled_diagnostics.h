// Findings of the tiled emulation: the stable diagnostic kinds the harness matches on, and the sink that collects them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rpa::tiled {

// Every kind has a stable name (diag_name) that starts every line the sink
// prints, so the harness can match "known-divergence." or "oob." without
// parsing the free-text detail after it.
enum class DiagKind : uint8_t {
  // The kernel and the reference differ by construction; the emulation
  // follows the kernel. Not a failure of the implementation under test.
  kMaskValueOverPadding,  // "known-divergence.mask-value-over-padding"
  kPvOverflow,            // "known-divergence.pv-overflow": V near float32's largest values
  // The TPU kernel would raise AssertionError while tracing; the emulation
  // computes anyway (unless TiledConfig::strict_trace_asserts).
  kTraceAssertQDtype,          // fold_on_2nd_minor, kernel.py:396
  kTraceAssertKvDtypeMismatch, // flash_attention's k.dtype == v.dtype, kernel.py:476
  kTraceAssertHeadDim,         // broadcast_to_shape, kernel.py:570
  // A read the TPU kernel makes out of bounds (SMEM scalars, HBM pages).
  kOobKvLens,
  kOobCuQLens,
  kOobPageIndices,
  kOobKvPages,
  // The double-buffer protocol (kernel.py:404-409, 597-619).
  kPrefetchMismatch,   // the buffer holds another block than the one consumed from it
  kWaitWithoutCopy,    // wait on a buffer with no copy in flight: the TPU would hang
  kCopyOverwritten,    // a copy started into a buffer whose copy was never waited
  kCopyNeverWaited,    // a copy still in flight when the kernel ends
  // Output rows below cu_q_lens[num_seqs] that no masked store wrote in
  // their grid step: they hold stale accumulator values.
  kUnstoredRows,
  // Index arithmetic the kernel does in int32 would overflow.
  kInt32Overflow,
};

enum class DiagClass : uint8_t { kKnownDivergence, kTraceAssertion, kOutOfBounds, kSchedule };

std::string_view diag_name(DiagKind kind);
DiagClass diag_class(DiagKind kind);
// True for kinds that name a difference by construction (known divergence or
// a trace-time assertion the emulation steps over), not a kernel finding.
inline bool is_by_construction(DiagKind kind) {
  const DiagClass c = diag_class(kind);
  return c == DiagClass::kKnownDivergence || c == DiagClass::kTraceAssertion;
}

// Collects findings; one entry per kind, keeping the first detail and a
// count, so a schedule that repeats a fault a million times stays readable.
class Diagnostics {
 public:
  void add(DiagKind kind, std::string detail);
  bool has(DiagKind kind) const { return count(kind) > 0; }
  int64_t count(DiagKind kind) const;
  bool empty() const { return entries_.empty(); }
  // "<name>: <first detail>" plus " [N times]" when repeated, in the order
  // the kinds first occurred.
  std::vector<std::string> lines() const;

 private:
  struct Entry {
    DiagKind kind;
    std::string first;
    int64_t count;
  };
  std::vector<Entry> entries_;
};

}  // namespace rpa::tiled
