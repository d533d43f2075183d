// Simulated training ranks for a running taot-planner: one taot::client::Client per rank, each on
// a thread of its own, their collectives (the node-name gather, the per-layer agreement) over the
// in-process transport and their plans from the daemon over gRPC through the client's own
// daemon link, in remote mode. Every rank reports each (step, layer, microbatch)'s row of a
// taot-sim workload, as a trainer's ranks would.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "round_report.h"
#include "taot/client/client.h"
#include "taot/planner/plan_identity.h"
#include "taot/sim/workload.h"

namespace taot::simranks {

struct SimRanksOptions {
  std::string address = "127.0.0.1:50051";
  std::string job_id;
  std::string token;
  int ranks_per_node = 8;  // rank r on node "node-<r / ranks_per_node>"
  int slots_per_rank = 2;  // K, as the daemon's job has it (it refuses another)
  // Each daemon call's deadline, and how long registering may take.
  absl::Duration call_timeout = absl::Seconds(30);
};

// One rank's plan of one round.
struct RankRound {
  PlanIdentity identity;
  double latency_us = 0;
};

class SimulatedRanks {
 public:
  // The daemon numbers a round's step step * microbatches + microbatch.
  SimulatedRanks(SimRanksOptions options, const sim::Workload& workload);

  // Runs every rank through every round. `on_layer` sees rank 0's plan of each (step, layer) at
  // its first microbatch as it comes back (called from rank 0's thread). Errors: the first
  // rank's (a client that could not be made: bad options, the daemon refusing the ranks).
  absl::Status Run(const std::function<void(int64_t step, int layer, const client::LayerPlan&)>& on_layer);

  // Over every round so far.
  Summary Summarize() const;
  // Layers some rank planned locally (the daemon unreachable, or failing a call): 0 when the
  // daemon planned every one.
  int64_t local_layers() const { return local_layers_; }

 private:
  void RunRank(int rank, std::shared_ptr<client::Transport> transport,
               const std::function<void(int64_t, int, const client::LayerPlan&)>& on_layer);

  const SimRanksOptions options_;
  const sim::Workload& workload_;
  const sim::WorkloadShape shape_;
  std::vector<std::vector<RankRound>> rounds_;  // per round (step, layer, microbatch), per rank
  std::vector<absl::Status> errors_;            // per rank
  std::vector<int64_t> local_plans_;            // per rank
  int64_t local_layers_ = 0;
};

}  // namespace taot::simranks
