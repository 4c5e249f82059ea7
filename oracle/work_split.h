// Runs independent work items on a few threads (the reference and the truth split by sequence and KV head).
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <thread>
#include <vector>

namespace rpa {

// Calls item(k) for k in [0, count) on up to `threads` threads; rethrows
// the first exception. Items must write disjoint outputs.
inline void run_items(int64_t count, int threads, const std::function<void(int64_t)>& item) {
  if (threads <= 1 || count <= 1) {
    for (int64_t k = 0; k < count; ++k) item(k);
    return;
  }
  std::atomic<int64_t> next{0};
  std::exception_ptr error;
  std::atomic<bool> failed{false};
  auto worker = [&] {
    for (int64_t k; !failed && (k = next.fetch_add(1)) < count;) {
      try {
        item(k);
      } catch (...) {
        if (!failed.exchange(true)) error = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  const int n = static_cast<int>(std::min<int64_t>(threads, count));
  for (int t = 1; t < n; ++t) pool.emplace_back(worker);
  worker();
  for (auto& th : pool) th.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace rpa
