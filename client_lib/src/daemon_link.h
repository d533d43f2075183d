// The client's side of the taot.v1.Planner wire API: one channel to the job's daemon, calls with
// deadlines and the job token, plans checked on arrival. Internal to libtaot_client.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "taot/client/client.h"
#include "taot/planner/load_matrix.h"
#include "taot/planner/plan.h"
#include "taot/v1/planner.grpc.pb.h"

namespace taot::client {

// A plan as the daemon sent it, checked: its content hashes to its hash.
struct RemotePlan {
  Plan plan;
  uint64_t version = 0;
  uint64_t hash = 0;
  bool fallback = false;
};

class DaemonLink {
 public:
  // The channel connects lazily: creating a link never waits for the daemon.
  static absl::StatusOr<std::unique_ptr<DaemonLink>> Create(const ClientOptions& options, int rank, int world_size);
  ~DaemonLink();

  absl::Status Register();
  absl::StatusOr<RemotePlan> ReportLoad(int64_t step, int layer, std::span<const int64_t> row);
  // Queued, sent by a background thread (off the critical path); the oldest is dropped when the
  // daemon falls behind, and what is queued at close goes out within one call timeout.
  void ReportMatrixLater(int64_t step, int layer, LoadMatrix load);
  // The latest placement pushed for (step, layer), waiting up to `wait` for it. Starts watching
  // on first use.
  std::optional<std::vector<Replica>> Placement(int64_t step, int layer, absl::Duration wait);

 private:
  DaemonLink(const ClientOptions& options, int rank, int world_size, std::shared_ptr<grpc::Channel> channel);
  void Prepare(grpc::ClientContext& context, absl::Duration timeout) const;
  void SendMatrices();
  void WatchPlacements();

  const ClientOptions options_;
  const int rank_, world_size_;
  std::unique_ptr<taot::v1::Planner::Stub> stub_;

  std::mutex mu_;
  std::condition_variable changed_;
  bool stopping_ = false;
  struct QueuedMatrix {
    int64_t step;
    int layer;
    LoadMatrix load;
  };
  std::deque<QueuedMatrix> matrices_;
  std::thread sender_;
  std::map<std::pair<int64_t, int>, std::vector<Replica>> placements_;
  std::thread watcher_;
  grpc::ClientContext* watch_context_ = nullptr;  // to cancel the watch at shutdown
};

}  // namespace taot::client
