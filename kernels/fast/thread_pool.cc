// The fast kernel's persistent thread pool.
#include "kernels/fast/thread_pool.h"

#include <algorithm>

namespace rpa::fast {
namespace {
thread_local bool t_in_worker = false;
}

ThreadPool& ThreadPool::global() {
  static ThreadPool pool;
  return pool;
}

int ThreadPool::hardware_threads() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::ensure_workers(int n) {
  // Worker i (1-based part index i) is workers_[i - 1].
  while (static_cast<int>(workers_.size()) < n - 1) {
    const int index = static_cast<int>(workers_.size()) + 1;
    workers_.emplace_back([this, index] { worker_loop(index); });
  }
}

void ThreadPool::worker_loop(int index) {
  t_in_worker = true;
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int)>* task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      if (index >= task_n_) continue;  // not needed for this task
      task = task_;
    }
    (*task)(index);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (--pending_ == 0) done_.notify_one();
    }
  }
}

void ThreadPool::run(int n, const std::function<void(int)>& fn) {
  if (n <= 1 || t_in_worker) {
    for (int i = 0; i < std::max(n, 1); ++i) fn(i);
    return;
  }
  std::lock_guard<std::mutex> serial(run_mutex_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ensure_workers(n);
    task_ = &fn;
    task_n_ = n;
    pending_ = n - 1;
    ++generation_;
  }
  wake_.notify_all();
  fn(0);
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return pending_ == 0; });
  task_ = nullptr;
}

}  // namespace rpa::fast
