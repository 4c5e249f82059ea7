// A small persistent std::thread pool for the fast kernel: run a function on N workers and wait.
#pragma once

#include <atomic>
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

  // std::thread::hardware_concurrency(), at least 1, read once per process:
  // libstdc++ asks glibc's get_nprocs, which reads a sysfs file - 15 us a
  // call warm and about 70 us after the caches were flushed, measured
  // inside the bench's decode call (0.5-0.8 ms) that asks for every thread.
  static int hardware_threads();

  // How long an idle worker, or a caller waiting for the workers, polls
  // before it sleeps on a condition variable. Waking a sleeping thread
  // costs tens to hundreds of microseconds on a virtual machine - a tenth
  // of a decode step - so a worker between kernel calls keeps polling a
  // while (as OpenMP runtimes do), with a pause instruction per poll.
  static constexpr int64_t kSpinMicros = 5000;

 private:
  void worker_loop(int index, uint64_t seen);
  void ensure_workers(int n);

  std::mutex run_mutex_;  // one run() at a time
  std::mutex mutex_;      // guards the sleeping paths only
  std::condition_variable wake_, done_;
  std::vector<std::thread> workers_;
  // Written by run() before it bumps generation_ (release); read by the
  // workers after they see the new generation (acquire).
  const std::function<void(int)>* task_ = nullptr;
  int task_n_ = 0;
  std::atomic<uint64_t> generation_{0};  // bumped per task
  std::atomic<int> pending_{0};          // workers yet to finish (or skip) the current task
  std::atomic<int> sleepers_{0};         // workers asleep on wake_
  std::atomic<bool> caller_sleeps_{false};
  std::atomic<bool> stop_{false};
};

}  // namespace rpa::fast
