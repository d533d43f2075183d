#include "taot/server/batch_workers.h"

namespace taot::server {

BatchWorkers::BatchWorkers(int threads) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { Work(i); });
}

BatchWorkers::~BatchWorkers() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& t : workers_) t.join();
}

void BatchWorkers::Run(int parts, const std::function<void(int)>& part) {
  {
    absl::MutexLock lock(&mu_);
    parts_ = parts;
    part_ = &part;
    pending_ = parts - 1;
    ++generation_;
  }
  part(0);
  absl::MutexLock lock(&mu_);
  auto done = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return pending_ == 0; };
  mu_.Await(absl::Condition(&done));
  part_ = nullptr;
}

void BatchWorkers::Work(int index) {
  uint64_t seen = 0;
  while (true) {
    const std::function<void(int)>* part = nullptr;
    {
      absl::MutexLock lock(&mu_);
      auto woken = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_ || generation_ != seen; };
      mu_.Await(absl::Condition(&woken));
      if (stopping_) return;
      seen = generation_;
      if (index >= parts_) continue;  // this Run has fewer parts than workers
      part = part_;
    }
    (*part)(index);
    absl::MutexLock lock(&mu_);
    --pending_;
  }
}

}  // namespace taot::server
