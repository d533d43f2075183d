// The client's side of the taot.v1.Planner wire API: one channel to the job's daemon, calls with
// deadlines and the job token, plans checked on arrival. Internal to libtaot_client.
#pragma once

#include <atomic>
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

// Whether the daemon refused a call for what it was (a configuration error: unknown job, a shape
// that disagrees, a wrong token) rather than failed to answer it: retrying cannot help.
bool IsRefusal(const absl::Status& status);

class DaemonLink {
 public:
  // The channel connects lazily: creating a link never waits for the daemon. `run_id` is the
  // job's run, the same on every rank.
  static absl::StatusOr<std::unique_ptr<DaemonLink>> Create(const ClientOptions& options, int rank, int world_size,
                                                            std::string run_id);
  ~DaemonLink();

  // Connects and registers, trying again after failures to answer (with jittered back-off) until
  // `deadline`; a refusal (IsRefusal) ends it at once. OK marks the link ready.
  absl::Status Register(absl::Time deadline);
  // Registered with the daemon, as far as this rank knows: after a successful Register, until a
  // call fails.
  bool ready() const;
  // After a failed call: not ready until a background registration (Register with back-off, one
  // connect_timeout per attempt) succeeds. Never blocks.
  void Reconnect();

  // One call of at most call_timeout; fails at once when the link is not ready. The plan is
  // checked on arrival (its content hashes to its hash: DATA_LOSS otherwise); its identity is
  // kDaemonRound, or kNoReplication for the daemon's fallback, with the daemon's reason.
  absl::StatusOr<LayerPlan> ReportLoad(int64_t step, int layer, std::span<const int64_t> row);
  // Queued, sent by a background thread (off the critical path); the oldest is dropped when the
  // daemon falls behind, and what is queued at close goes out within one call timeout.
  void ReportMatrixLater(int64_t step, int layer, LoadMatrix load);
  // The latest prefetch pushed for (step, layer), waiting up to `wait` for it. Starts watching
  // on first use.
  std::optional<std::vector<Replica>> Prefetched(int64_t step, int layer, absl::Duration wait);

 private:
  DaemonLink(const ClientOptions& options, int rank, int world_size, std::string run_id,
             std::shared_ptr<grpc::Channel> channel);
  void Prepare(grpc::ClientContext& context, absl::Duration timeout) const;
  absl::Status RegisterOnce(absl::Time deadline);
  // Sleeps for `pause`, or less when the link is closing; false when it is.
  bool Pause(absl::Duration pause);
  void Reregister();
  void SendMatrices();
  void WatchPrefetches();

  const ClientOptions options_;
  const int rank_, world_size_;
  const std::string run_id_;
  std::unique_ptr<taot::v1::Planner::Stub> stub_;
  std::atomic<bool> ready_{false};

  std::mutex mu_;
  std::condition_variable changed_;
  bool stopping_ = false;
  bool reconnect_wanted_ = false;
  std::thread reconnector_;
  struct QueuedMatrix {
    int64_t step;
    int layer;
    LoadMatrix load;
  };
  std::deque<QueuedMatrix> matrices_;
  std::thread sender_;
  std::map<std::pair<int64_t, int>, std::vector<Replica>> prefetches_;
  std::thread watcher_;
  grpc::ClientContext* watch_context_ = nullptr;     // to cancel the watch at shutdown
  grpc::ClientContext* register_context_ = nullptr;  // and a registration in flight
};

}  // namespace taot::client
