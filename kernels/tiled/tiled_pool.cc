// WorkerPool: a mutex-and-condition-variable pool; jobs are handed out one at a time.
#include "kernels/tiled/tiled_pool.h"

namespace rpa::tiled {

WorkerPool::WorkerPool(int threads) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void WorkerPool::drain(int worker) {
  std::unique_lock<std::mutex> lock(mu_);
  while (next_ < n_) {
    const int64_t job = next_++;
    const auto* fn = fn_;
    lock.unlock();
    (*fn)(job, worker);
    lock.lock();
    if (++finished_ == n_) done_cv_.notify_all();
  }
}

void WorkerPool::worker_loop(int worker) {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    drain(worker);
  }
}

void WorkerPool::parallel_for(int64_t n, const std::function<void(int64_t, int)>& fn) {
  if (workers_.empty() || n <= 1) {
    for (int64_t j = 0; j < n; ++j) fn(j, 0);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    fn_ = &fn;
    n_ = n;
    next_ = 0;
    finished_ = 0;
    ++generation_;
  }
  start_cv_.notify_all();
  drain(0);
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [&] { return finished_ == n_; });
  fn_ = nullptr;
  n_ = 0;
}

}  // namespace rpa::tiled
