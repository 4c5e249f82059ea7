// The fast kernel's persistent thread pool: tasks published through an atomic generation, polled, then slept on.
#include "kernels/fast/thread_pool.h"

#include <algorithm>
#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace rpa::fast {
namespace {
thread_local bool t_in_worker = false;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

// Polls `done` for up to ThreadPool::kSpinMicros; true if it became true.
template <class Done>
bool spin_until(Done done) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::microseconds(ThreadPool::kSpinMicros);
  for (;;) {
    for (int i = 0; i < 256; ++i) {
      if (done()) return true;
      cpu_relax();
    }
    if (Clock::now() >= deadline) return done();
  }
}
}  // namespace

ThreadPool& ThreadPool::global() {
  static ThreadPool pool;
  return pool;
}

int ThreadPool::hardware_threads() {
  static const int n = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  return n;
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::ensure_workers(int n) {
  // Worker i (1-based part index i) is workers_[i - 1].
  while (static_cast<int>(workers_.size()) < n - 1) {
    const int index = static_cast<int>(workers_.size()) + 1;
    // The generation the worker has seen is the one before the task about
    // to be published: read here, not when the thread gets to run.
    const uint64_t seen = generation_.load();
    workers_.emplace_back([this, index, seen] { worker_loop(index, seen); });
  }
}

void ThreadPool::worker_loop(int index, uint64_t seen) {
  t_in_worker = true;
  for (;;) {
    const auto fresh = [&] { return stop_.load() || generation_.load(std::memory_order_acquire) != seen; };
    if (!spin_until(fresh)) {
      std::unique_lock<std::mutex> lock(mutex_);
      sleepers_.fetch_add(1);
      wake_.wait(lock, fresh);
      sleepers_.fetch_sub(1);
    }
    if (stop_.load()) return;
    // Every worker acknowledges every task, needed or not, so run() never
    // publishes the next task while one is still reading this one's.
    ++seen;
    if (index < task_n_) (*task_)(index);
    if (pending_.fetch_sub(1) == 1 && caller_sleeps_.load()) {
      std::lock_guard<std::mutex> lock(mutex_);
      done_.notify_one();
    }
  }
}

void ThreadPool::run(int n, const std::function<void(int)>& fn) {
  if (n <= 1 || t_in_worker) {
    for (int i = 0; i < std::max(n, 1); ++i) fn(i);
    return;
  }
  std::lock_guard<std::mutex> serial(run_mutex_);
  ensure_workers(n);
  task_ = &fn;
  task_n_ = n;
  pending_.store(static_cast<int>(workers_.size()));
  generation_.fetch_add(1);  // publishes task_ and task_n_
  if (sleepers_.load() > 0) {
    std::lock_guard<std::mutex> lock(mutex_);
    wake_.notify_all();
  }
  fn(0);
  const auto finished = [&] { return pending_.load() == 0; };
  if (!spin_until(finished)) {
    std::unique_lock<std::mutex> lock(mutex_);
    caller_sleeps_.store(true);
    done_.wait(lock, finished);
    caller_sleeps_.store(false);
  }
  task_ = nullptr;
}

}  // namespace rpa::fast
