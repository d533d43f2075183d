#include "simulated_ranks.h"

#include <algorithm>
#include <memory>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "taot/client/in_process_transport.h"

namespace taot::simranks {
namespace {

struct Round {
  int step, layer, microbatch;
};

std::vector<Round> RoundsOf(const sim::WorkloadShape& shape) {
  std::vector<Round> rounds;
  for (int s = 0; s < shape.steps; ++s) {
    for (int l = 0; l < shape.layers; ++l) {
      for (int m = 0; m < shape.microbatches; ++m) rounds.push_back({s, l, m});
    }
  }
  return rounds;
}

client::ClientOptions ClientOptionsFor(const SimRanksOptions& o, const sim::WorkloadShape& shape, int rank) {
  client::ClientOptions c;
  c.job_id = o.job_id;
  c.experts = shape.experts;
  c.slots_per_rank = o.slots_per_rank;
  c.node = absl::StrCat("node-", rank / o.ranks_per_node);
  c.local_rank = rank % o.ranks_per_node;
  c.device = absl::StrCat("sim:", c.local_rank);
  c.mode = client::Mode::kRemote;
  c.address = o.address;
  c.token = o.token;
  c.call_timeout = o.call_timeout;
  c.connect_timeout = o.call_timeout;
  return c;
}

}  // namespace

SimulatedRanks::SimulatedRanks(SimRanksOptions options, const sim::Workload& workload)
    : options_(std::move(options)), workload_(workload), shape_(workload.shape()) {}

absl::Status SimulatedRanks::Run(const std::function<void(int64_t, int, const client::LayerPlan&)>& on_layer) {
  const size_t ranks = static_cast<size_t>(shape_.ranks);
  rounds_.assign(RoundsOf(shape_).size(), std::vector<RankRound>(ranks));
  errors_.assign(ranks, absl::OkStatus());
  local_plans_.assign(ranks, 0);
  std::vector<std::unique_ptr<client::Transport>> transports = client::ConnectInProcess(shape_.ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < shape_.ranks; ++r) {
    std::shared_ptr<client::Transport> transport = std::move(transports[static_cast<size_t>(r)]);
    threads.emplace_back([this, r, transport, &on_layer] { RunRank(r, transport, on_layer); });
  }
  for (std::thread& t : threads) t.join();
  local_layers_ = 0;
  for (int64_t n : local_plans_) local_layers_ = std::max(local_layers_, n);
  for (const absl::Status& s : errors_) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

void SimulatedRanks::RunRank(int rank, std::shared_ptr<client::Transport> transport,
                             const std::function<void(int64_t, int, const client::LayerPlan&)>& on_layer) {
  absl::StatusOr<std::unique_ptr<client::Client>> made =
      client::Client::Create(ClientOptionsFor(options_, shape_, rank), std::move(transport));
  if (!made.ok()) {
    errors_[static_cast<size_t>(rank)] =
        absl::Status(made.status().code(), absl::StrCat("rank ", rank, ": ", made.status().message()));
    return;
  }
  client::Client& client = **made;
  const std::vector<Round> rounds = RoundsOf(shape_);
  for (size_t i = 0; i < rounds.size(); ++i) {
    const Round& round = rounds[i];
    const LoadMatrix load = workload_.Load(round.step, round.layer, round.microbatch);
    const int64_t step = int64_t{round.step} * shape_.microbatches + round.microbatch;
    absl::StatusOr<client::LayerPlan> plan = client.PlanLayer(step, round.layer, load.row(rank));
    if (!plan.ok()) {
      errors_[static_cast<size_t>(rank)] = absl::Status(
          plan.status().code(),
          absl::StrCat("rank ", rank, ": step ", step, " layer ", round.layer, ": ", plan.status().message()));
      return;
    }
    rounds_[i][static_cast<size_t>(rank)] = {plan->identity, absl::ToDoubleMicroseconds(plan->plan_time)};
    if (rank == 0 && round.microbatch == 0 && on_layer) on_layer(round.step, round.layer, *plan);
  }
  local_plans_[static_cast<size_t>(rank)] = client.stats().local_plans;
}

Summary SimulatedRanks::Summarize() const {
  int fallbacks = 0, mismatched = 0;
  std::vector<double> latencies;
  for (const std::vector<RankRound>& round : rounds_) {
    for (const RankRound& r : round) {
      mismatched += r.identity.SamePlanAs(round[0].identity) ? 0 : 1;
      latencies.push_back(r.latency_us);
    }
    fallbacks += round[0].identity.provenance == Provenance::kDaemonRound ? 0 : 1;
  }
  return simranks::Summarize(static_cast<int>(rounds_.size()), shape_.ranks, fallbacks, mismatched,
                             std::move(latencies));
}

}  // namespace taot::simranks
