// A small persistent std::thread pool for the fast kernel: run a function on N workers and wait.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace rpa::fast {

class ThreadPool {
 public:
  // The process-wide pool; workers are started on first use and grow on demand.
  static ThreadPool& global();
  ~ThreadPool();

  // Runs fn(w) for w in [0, n) on n threads (the caller runs w = 0) and
  // returns when all have finished. Calls from different threads are
  // serialised; a call from inside a worker runs its n parts inline.
  void run(int n, const std::function<void(int)>& fn);

  // std::thread::hardware_concurrency(), at least 1.
  static int hardware_threads();

 private:
  void worker_loop(int index);
  void ensure_workers(int n);

  std::mutex run_mutex_;  // one run() at a time
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> workers_;
  const std::function<void(int)>* task_ = nullptr;
  int task_n_ = 0;          // parts of the current task
  uint64_t generation_ = 0; // bumped per task
  int pending_ = 0;         // helper parts not yet finished
  bool stop_ = false;
};

}  // namespace rpa::fast
