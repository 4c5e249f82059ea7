// A small fixed thread pool for the tiled emulation: runs the independent KV heads of one grid step side by side.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace rpa::tiled {

// parallel_for(n, fn) calls fn(job, worker) for job in [0, n), each exactly
// once, worker in [0, size()) naming the caller's scratch slot; the caller
// takes part and returns when all jobs are done. Which worker runs which job
// varies, so jobs must not depend on it beyond scratch.
class WorkerPool {
 public:
  explicit WorkerPool(int threads);  // threads <= 1: everything inline
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  int size() const { return int(workers_.size()) + 1; }
  void parallel_for(int64_t n, const std::function<void(int64_t job, int worker)>& fn);

 private:
  void worker_loop(int worker);
  void drain(int worker);

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  const std::function<void(int64_t, int)>* fn_ = nullptr;
  int64_t n_ = 0, next_ = 0, finished_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

}  // namespace rpa::tiled
