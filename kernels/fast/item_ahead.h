// A worker thread's claim on its next work item, made while the current one still runs.
#pragma once

#include <atomic>
#include <cstddef>

#include "kernels/fast/plan.h"

namespace rpa::fast {

// Items are taken from an atomic counter (RunPlan). An item that streams
// its next block into L2 while it computes the current one (GroupBf16) has
// nothing to stream during its last block, and the thread's next item
// starts by asking for its whole first block at once with nothing to
// overlap it. Claiming the next item when the last block starts lets that
// block stream the next item's first block instead; the thread then runs
// the claimed item rather than taking a fresh one from the counter. The
// claim is made one block before the item ends, so the threads' shares of
// the queue stay as even as before.
struct ItemAhead {
  static constexpr size_t kNone = ~size_t(0);

  const Plan* plan = nullptr;
  std::atomic<size_t>* next = nullptr;  // the plan's item counter
  size_t claimed = kNone;               // the item claimed, kNone before a claim
  bool streamed = false;                // its first block was asked for (the item then skips its burst)

  // The next item, claimed now if it was not yet; nullptr when the queue is empty.
  const WorkItem* Claim() {
    if (claimed == kNone) claimed = next->fetch_add(1);
    return claimed < plan->items.size() ? &plan->items[claimed] : nullptr;
  }
};

}  // namespace rpa::fast
