// Threads that plan the parts of a batch side by side (the daemon's --planning-threads), kept
// from batch to batch: a thread started per batch would cost as much as a small layer's plan.
// gRPC-free.
#pragma once

#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace taot::server {

class BatchWorkers {
 public:
  // `threads` threads in all, the caller of Run one of them (so threads - 1 are started).
  explicit BatchWorkers(int threads);
  ~BatchWorkers();
  BatchWorkers(const BatchWorkers&) = delete;
  BatchWorkers& operator=(const BatchWorkers&) = delete;

  int threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs part(i) for every i in [0, parts), parts at most threads(): part 0 on the calling
  // thread, the others on the workers. Returns once all are done. One Run at a time.
  void Run(int parts, const std::function<void(int)>& part);

 private:
  void Work(int index);

  absl::Mutex mu_;
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;  // counts up at every Run
  int parts_ ABSL_GUARDED_BY(mu_) = 0;
  int pending_ ABSL_GUARDED_BY(mu_) = 0;  // workers' parts of this Run not done yet
  const std::function<void(int)>* part_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> workers_;
};

}  // namespace taot::server
