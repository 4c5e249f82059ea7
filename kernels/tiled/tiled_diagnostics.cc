// Names, classes and the collecting sink of the tiled emulation's diagnostics.
#include "kernels/tiled/tiled_diagnostics.h"

namespace rpa::tiled {

std::string_view diag_name(DiagKind kind) {
  switch (kind) {
    case DiagKind::kMaskValueOverPadding: return "known-divergence.mask-value-over-padding";
    case DiagKind::kPvOverflow: return "known-divergence.pv-overflow";
    case DiagKind::kTraceAssertQDtype: return "trace-assertion.q-dtype";
    case DiagKind::kTraceAssertKvDtypeMismatch: return "trace-assertion.kv-dtype-mismatch";
    case DiagKind::kTraceAssertHeadDim: return "trace-assertion.head-dim";
    case DiagKind::kOobKvLens: return "oob.kv_lens";
    case DiagKind::kOobCuQLens: return "oob.cu_q_lens";
    case DiagKind::kOobPageIndices: return "oob.page_indices";
    case DiagKind::kOobKvPages: return "oob.kv_pages";
    case DiagKind::kPrefetchMismatch: return "schedule.prefetch-mismatch";
    case DiagKind::kWaitWithoutCopy: return "schedule.wait-without-copy";
    case DiagKind::kCopyOverwritten: return "schedule.copy-overwritten";
    case DiagKind::kCopyNeverWaited: return "schedule.copy-never-waited";
    case DiagKind::kUnstoredRows: return "schedule.unstored-rows";
    case DiagKind::kInt32Overflow: return "schedule.int32-overflow";
  }
  return "unknown";
}

DiagClass diag_class(DiagKind kind) {
  switch (kind) {
    case DiagKind::kMaskValueOverPadding:
    case DiagKind::kPvOverflow: return DiagClass::kKnownDivergence;
    case DiagKind::kTraceAssertQDtype:
    case DiagKind::kTraceAssertKvDtypeMismatch:
    case DiagKind::kTraceAssertHeadDim: return DiagClass::kTraceAssertion;
    case DiagKind::kOobKvLens:
    case DiagKind::kOobCuQLens:
    case DiagKind::kOobPageIndices:
    case DiagKind::kOobKvPages: return DiagClass::kOutOfBounds;
    default: return DiagClass::kSchedule;
  }
}

void Diagnostics::add(DiagKind kind, std::string detail) {
  for (auto& e : entries_) {
    if (e.kind == kind) {
      ++e.count;
      return;
    }
  }
  entries_.push_back({kind, std::move(detail), 1});
}

int64_t Diagnostics::count(DiagKind kind) const {
  for (const auto& e : entries_)
    if (e.kind == kind) return e.count;
  return 0;
}

std::vector<std::string> Diagnostics::lines() const {
  std::vector<std::string> out;
  out.reserve(entries_.size());
  for (const auto& e : entries_) {
    std::string line = std::string(diag_name(e.kind)) + ": " + e.first;
    if (e.count > 1) line += " [" + std::to_string(e.count) + " times]";
    out.push_back(std::move(line));
  }
  return out;
}

}  // namespace rpa::tiled
