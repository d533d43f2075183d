#include "taot/client/client.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <vector>

#include "absl/base/casts.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "daemon_link.h"
#include "load_source.h"
#include "taot/planner/fnv1a.h"
#include "taot/planner/plan_hash.h"
#include "taot/planner/plan_request.h"
#include "taot/planner/registry.h"
#include "taot/planner/run_planner.h"
#include "taot/planner/split_over_replicas.h"
#include "taot/planner/topology.h"

namespace taot::client {
namespace {

constexpr size_t kMaxRunIdBytes = 128;

// 64-bit FNV-1a of a name (a node's, a run's): what ranks gather to compare names.
int64_t NameHash(std::string_view name) {
  Fnv1a h;
  h.AddBytes(name);
  return static_cast<int64_t>(h.hash());
}

absl::Status CheckOptions(const ClientOptions& o, int world_size) {
  if (o.experts <= 0 || o.experts % world_size != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("experts: must be a positive multiple of the world size (", world_size, "), got ", o.experts));
  }
  if (o.slots_per_rank < 0)
    return absl::InvalidArgumentError(absl::StrCat("slots_per_rank: must be >= 0, got ", o.slots_per_rank));
  if (o.expert_bytes < 0)
    return absl::InvalidArgumentError(absl::StrCat("expert_bytes: must be >= 0, got ", o.expert_bytes));
  if (o.node.empty()) return absl::InvalidArgumentError("node: must name this rank's host or node");
  if (o.mode != Mode::kLocal && o.address.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("address: mode ", std::string(ModeName(o.mode)), " needs the daemon's address"));
  }
  if (!o.address.empty() && o.job_id.empty()) return absl::InvalidArgumentError("job_id: must name the daemon's job");
  for (auto [field, d] : {std::pair{"call_timeout", o.call_timeout},
                          {"connect_timeout", o.connect_timeout},
                          {"placement_wait", o.placement_wait},
                          {"collective_timeout", o.collective_timeout}}) {
    if (d < absl::ZeroDuration()) return absl::InvalidArgumentError(absl::StrCat(field, ": must not be negative"));
  }
  if (o.reconnect_max_layers < 1) return absl::InvalidArgumentError("reconnect_max_layers: must be >= 1");
  if (o.run_id.size() > kMaxRunIdBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("run_id: must be at most ", kMaxRunIdBytes, " bytes, got ", o.run_id.size()));
  }
  return absl::OkStatus();
}

// The run id every rank uses: the one they were all given, or rank 0's random draw when none was.
// `all` holds each rank's (given run id's hash or 0, random draw).
absl::StatusOr<std::string> AgreeOnRunId(const ClientOptions& o, std::span<const int64_t> all) {
  for (size_t r = 0; r < all.size(); r += 2) {
    if (all[r] != all[0]) {
      return absl::InvalidArgumentError(absl::StrCat("run_id: must be the same on every rank (or empty on all); rank ",
                                                     r / 2, "'s differs from rank 0's"));
    }
  }
  if (all[0] != 0) return o.run_id;
  return absl::StrCat(absl::Hex(static_cast<uint64_t>(all[1]), absl::kZeroPad16));
}

// What ranks compare to know that they hold the same placement.
int64_t PlacementHash(const std::vector<Replica>& replicas) {
  Plan placement;
  placement.replicas = replicas;
  return static_cast<int64_t>(PlanHash(placement));
}

// The options every rank must give alike: with them, every rank's local planner makes the same
// plan from the same gathered counts, and every rank calls the same collectives.
constexpr size_t kSharedSettings = 6;
using SharedSettings = std::array<int64_t, kSharedSettings>;
constexpr const char* kSharedSettingNames[kSharedSettings] = {
    "experts", "slots_per_rank", "expert_bytes", "inter_node_cost", "mode", "planner and params"};

SharedSettings SharedSettingsOf(const ClientOptions& o) {
  Fnv1a planner;
  planner.AddBytes(o.planner);
  for (const auto& [key, value] : o.params) {
    planner.AddBytes(key);
    planner.AddBytes("=");
    planner.AddBytes(value);
    planner.AddBytes(";");
  }
  return {o.experts,
          o.slots_per_rank,
          o.expert_bytes,
          absl::bit_cast<int64_t>(o.inter_node_cost),
          static_cast<int64_t>(o.mode),
          static_cast<int64_t>(planner.hash())};
}

absl::Status CheckSharedSettings(const SharedSettings& mine, const SharedSettings& theirs, int rank) {
  for (size_t i = 0; i < kSharedSettings; ++i) {
    if (mine[i] == theirs[i]) continue;
    return absl::InvalidArgumentError(absl::StrCat(kSharedSettingNames[i], ": must be the same on every rank; rank ",
                                                   rank, "'s differs from this rank's"));
  }
  return absl::OkStatus();
}

// One line of what the client changed, to options.log or standard error.
void Say(const ClientOptions& options, int rank, std::string_view line) {
  const std::string text = absl::StrCat("taot rank ", rank, ": ", std::string(line));
  if (options.log) {
    options.log(text);
  } else {
    std::fprintf(stderr, "%s\n", text.c_str());
  }
}

// What a rank's registration came to, as every rank gathers it.
enum RegistrationOutcome : int64_t { kRegistered = 0, kUnreachable = 1, kRefused = 2 };

}  // namespace

absl::StatusOr<Mode> ParseMode(std::string_view name) {
  if (name == "remote") return Mode::kRemote;
  if (name == "predictive") return Mode::kPredictive;
  if (name == "local") return Mode::kLocal;
  return absl::InvalidArgumentError(
      absl::StrCat("mode: must be remote, predictive or local, got '", std::string(name), "'"));
}

std::string_view ModeName(Mode mode) {
  switch (mode) {
    case Mode::kRemote:
      return "remote";
    case Mode::kPredictive:
      return "predictive";
    case Mode::kLocal:
      return "local";
  }
  return "?";
}

class Client::Impl {
 public:
  Impl(ClientOptions options, Transport& transport, std::shared_ptr<const Problem> problem,
       std::unique_ptr<Planner> planner, std::unique_ptr<DaemonLink> link, bool all_registered)
      : options_(std::move(options)),
        transport_(transport),
        gathered_(EmptyRequest(std::move(problem))),
        planner_(std::move(planner)),
        link_(std::move(link)),
        tags_(static_cast<size_t>(transport.size())),
        daemon_in_use_(all_registered) {}

  absl::StatusOr<LayerPlan> PlanLayer(int64_t step, int layer, std::span<const int64_t> row) {
    if (absl::Status s = CheckLayer(step, layer); !s.ok()) return s;
    if (row.size() != static_cast<size_t>(options_.experts)) {
      return absl::InvalidArgumentError(
          absl::StrCat("row: must have one entry per expert (", options_.experts, "), got ", row.size()));
    }
    if (const std::optional<size_t> e = FirstOutOfRange(row)) {
      return absl::InvalidArgumentError(
          absl::StrCat("row[", *e, "]: must be in [0, ", kMaxTokensPerEntry, "], got ", row[*e]));
    }
    HostRow source(transport_, row, options_.collective_timeout, host_row_);
    return PlanLayerFrom(step, layer, source);
  }

  absl::StatusOr<LayerPlan> PlanLayerFromIds(int64_t step, int layer, const RouterIds& ids,
                                             std::optional<uintptr_t> trainer_stream) {
    if (absl::Status s = CheckLayer(step, layer); !s.ok()) return s;
    if (ids.pairs < 0 || ids.pairs > kMaxTokensPerEntry) {
      return absl::InvalidArgumentError(
          absl::StrCat("ids.pairs: must be in [0, ", kMaxTokensPerEntry, "], got ", ids.pairs));
    }
    if (ids.data == nullptr && ids.pairs > 0) return absl::InvalidArgumentError("ids.data: must not be null");
    PlaneIds source(transport_, ids, trainer_stream, options_.experts, options_.collective_timeout, plane_counts_);
    return PlanLayerFrom(step, layer, source);
  }

  absl::StatusOr<std::optional<Plan>> Placement(int64_t step, int layer, absl::Duration wait) {
    if (options_.mode != Mode::kPredictive) {
      return absl::FailedPreconditionError(
          absl::StrCat("placement: only predictive mode gets placements; this "
                       "client's mode is ",
                       std::string(ModeName(options_.mode))));
    }
    if (absl::Status s = CheckLayer(step, layer); !s.ok()) return s;
    std::optional<std::vector<Replica>> replicas = link_->Prefetched(step, layer, wait);
    Plan placement;
    if (replicas.has_value()) placement.replicas = *replicas;
    const int64_t mine[2] = {replicas.has_value() ? 1 : 0, replicas.has_value() ? PlacementHash(*replicas) : 0};
    std::vector<int64_t> all(2 * static_cast<size_t>(transport_.size()));
    if (absl::Status s = transport_.AllGather(mine, all, options_.collective_timeout); !s.ok()) return s;
    for (size_t r = 0; r < all.size(); r += 2) {
      if (all[r] == 0 || all[r + 1] != mine[1]) return std::nullopt;
    }
    return placement;
  }

  ClientStats stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }

 private:
  absl::Status CheckLayer(int64_t step, int layer) const {
    if (step < 0) return absl::InvalidArgumentError(absl::StrCat("step: must be >= 0, got ", step));
    if (layer < 0) return absl::InvalidArgumentError(absl::StrCat("layer: must be >= 0, got ", layer));
    return absl::OkStatus();
  }

  absl::StatusOr<LayerPlan> PlanLayerFrom(int64_t step, int layer, LoadSource& source) {
    const absl::Time start = absl::Now();
    absl::StatusOr<Candidate> plan;
    switch (options_.mode) {
      case Mode::kRemote:
        plan = Remote(step, layer, source);
        break;
      case Mode::kPredictive:
        plan = Predictive(step, layer, source);
        break;
      case Mode::kLocal:
        plan = Local(step, layer, source, "");
        break;
    }
    if (!plan.ok()) return plan.status();
    LayerPlan agreed = Agree(*std::move(plan));
    agreed.plan_time = absl::Now() - start;
    return agreed;
  }

  // A rank's plan, and whether every rank holds the same one: known from the gathered values
  // every rank reached it from (local and predictive modes), or from the gather of the daemon's
  // answers (remote mode).
  struct Candidate {
    LayerPlan plan;
    bool all_hold_it;
  };

  // The daemon's plan, unless a rank could not get it (then all plan locally, skip the daemon
  // for a growing number of layers, and ask it again once every rank is registered again).
  absl::StatusOr<Candidate> Remote(int64_t step, int layer, LoadSource& source) {
    if (!daemon_in_use_ || skip_layers_ > 0) {
      if (skip_layers_ > 0) --skip_layers_;
      bool all_ready = false;
      absl::StatusOr<Candidate> plan =
          Local(step, layer, source,
                daemon_in_use_ ? "the daemon failed a call recently" : "not every rank is registered with the daemon",
                link_->ready(), &all_ready);
      if (plan.ok() && !daemon_in_use_ && all_ready) {
        daemon_in_use_ = true;
        Log(absl::StrCat("(step ", step, ", layer ", layer, ") every rank is registered with the daemon",
                         skip_layers_ > 0 ? "" : ": it plans from the next layer"));
      }
      return plan;
    }
    absl::StatusOr<std::span<const int64_t>> row = source.Row();
    if (!row.ok()) return row.status();
    absl::StatusOr<LayerPlan> remote = link_->ReportLoad(step, layer, *row);
    const int64_t mine[3] = {remote.ok() ? 1 : 0, remote.ok() ? static_cast<int64_t>(remote->identity.version) : 0,
                             remote.ok() ? static_cast<int64_t>(remote->identity.hash) : 0};
    std::vector<int64_t> all(3 * static_cast<size_t>(transport_.size()));
    if (absl::Status s = transport_.AllGather(mine, all, options_.collective_timeout); !s.ok()) return s;
    int failed = 0;
    for (size_t r = 0; r < all.size(); r += 3) failed += all[r] == 0 ? 1 : 0;
    if (failed > 0) {
      if (!remote.ok()) link_->Reconnect();
      daemon_in_use_ = false;
      skip_layers_ = next_skip_ - 1;
      next_skip_ = std::min(2 * next_skip_, options_.reconnect_max_layers);
      Count(&ClientStats::daemon_failures);
      std::string reason = absl::StrCat(failed, " rank(s) could not get the daemon's plan",
                                        remote.ok() ? "" : absl::StrCat(" (here: ", remote.status().message(), ")"));
      Log(absl::StrCat("(step ", step, ", layer ", layer, ") planned locally: ", reason,
                       "; the daemon is asked again once every rank is registered, and in ", skip_layers_ + 1,
                       " layer(s) at the soonest"));
      return Local(step, layer, source, std::move(reason));
    }
    if (next_skip_ > 1) Log(absl::StrCat("(step ", step, ", layer ", layer, ") the daemon plans again"));
    next_skip_ = 1;
    LayerPlan out = *std::move(remote);
    if (out.identity.fallback()) {
      out.identity.reason = "the daemon's fallback (rows missing at its deadline, or its planner failed)";
    }
    Count(&ClientStats::daemon_plans);
    // The gather above already holds every rank's (version, hash): the agreement needs no second.
    bool same = true;
    for (size_t r = 0; r < all.size(); r += 3) same = same && all[r + 1] == mine[1] && all[r + 2] == mine[2];
    return Candidate{std::move(out), same};
  }

  // The daemon's placement split over the gathered counts when every rank holds the same one (each
  // rank's tag says which it holds), else the local planner's plan on every rank.
  absl::StatusOr<Candidate> Predictive(int64_t step, int layer, LoadSource& source) {
    // The daemon places (step, layer) from the round (step - 1, layer): wait only when this
    // client reported that round.
    const bool expected = reported_.contains({step - 1, layer});
    reported_.insert({step, layer});
    if (reported_.size() > 4096) reported_.erase(reported_.begin());
    std::optional<std::vector<Replica>> replicas =
        link_->Prefetched(step, layer, expected ? options_.placement_wait : absl::ZeroDuration());
    RankTag mine{1, 0, 0};
    if (replicas.has_value()) mine = {1, 1, PlacementHash(*replicas)};
    if (absl::Status s = source.Gather(mine, gathered_.load.values(), tags_); !s.ok()) return s;
    if (transport_.rank() == 0) link_->ReportMatrixLater(step, layer, gathered_.load);
    const auto holding = std::count(tags_.begin(), tags_.end(), mine);
    if (!replicas.has_value()) return PlanHere("no placement for this layer yet");
    if (holding < transport_.size()) {
      return PlanHere(absl::StrCat(holding, " of ", transport_.size(), " ranks held this layer's placement"));
    }
    absl::StatusOr<Plan> split = splitter_.Split(gathered_, *replicas);
    if (!split.ok()) return PlanHere(absl::StrCat("the placement did not fit: ", split.status().message()));
    LayerPlan out;
    out.plan = *std::move(split);
    out.identity = {0, PlanHash(out.plan), Provenance::kPushedReplicas, ""};
    Count(&ClientStats::placement_plans);
    return Candidate{std::move(out), true};
  }

  // The local planner's plan; `ready` rides in this rank's tag, and `all_ready` (when asked)
  // says whether every rank's was set.
  absl::StatusOr<Candidate> Local(int64_t step, int layer, LoadSource& source, std::string reason, bool ready = true,
                                  bool* all_ready = nullptr) {
    if (absl::Status s = source.Gather(RankTag{ready ? 1 : 0, 0, 0}, gathered_.load.values(), tags_); !s.ok()) {
      return s;
    }
    if (all_ready != nullptr) {
      *all_ready = std::all_of(tags_.begin(), tags_.end(), [](const RankTag& t) { return t.ready != 0; });
    }
    if (link_ != nullptr && options_.mode == Mode::kLocal && transport_.rank() == 0) {
      link_->ReportMatrixLater(step, layer, gathered_.load);  // the daemon's metrics
    }
    return PlanHere(std::move(reason));
  }

  // The local planner on gathered_. Every rank holds the same plan without asking: they planned
  // the same gathered counts with the same deterministic planner (Planner's contract; the name,
  // parameters and problem are checked equal on every rank when the client is made).
  absl::StatusOr<Candidate> PlanHere(std::string reason) {
    uint64_t hash = 0;
    absl::StatusOr<Plan> plan = CheckedPlan(*planner_, gathered_, &hash);  // no scorecard: nothing here reads one
    if (!plan.ok()) return plan.status();
    LayerPlan out;
    out.plan = *std::move(plan);
    out.identity = {0, hash, Provenance::kLocalPlan, std::move(reason)};
    Count(&ClientStats::local_plans);
    return Candidate{std::move(out), true};
  }

  // The same plan on every rank, or no replication on all.
  LayerPlan Agree(Candidate candidate) {
    LayerPlan& plan = candidate.plan;
    Count(&ClientStats::layers);
    if (candidate.all_hold_it) return std::move(plan);
    Count(&ClientStats::disagreements);
    const char* from = ProvenanceName(plan.identity.provenance);
    Log(absl::StrCat("the ranks held different plans (this rank's came from ", from,
                     "): no replication for this layer"));
    LayerPlan none;
    none.identity = {0, PlanHash(none.plan), Provenance::kNoReplication,
                     absl::StrCat("the ranks held different plans (this rank's came from ", from, ")")};
    return none;
  }

  void Log(const std::string& line) const { Say(options_, transport_.rank(), line); }

  void Count(int64_t ClientStats::*counter) {
    std::lock_guard<std::mutex> lock(mu_);
    ++(stats_.*counter);
  }

  const ClientOptions options_;
  Transport& transport_;
  PlanRequest gathered_;  // the job's request; its load is the latest all-gathered counts
  std::unique_ptr<Planner> planner_;
  std::unique_ptr<DaemonLink> link_;
  std::vector<RankTag> tags_;  // every rank's tag from the latest gather
  HostRowBuffers host_row_;    // HostRow's buffers, kept between layers
  PlaneCounts plane_counts_;   // PlaneIds' buffers, kept between layers
  ReplicaSplitter splitter_;   // the predictive mode's split, its buffers kept between layers
  // The daemon back-off, the same on every rank (driven by gathered values only): whether every
  // rank is known to be registered, and the layers still to plan locally after a failure.
  bool daemon_in_use_;
  int skip_layers_ = 0;
  int next_skip_ = 1;
  std::set<std::pair<int64_t, int>> reported_;  // predictive mode's (step, layer)s sent to the daemon
  mutable std::mutex mu_;
  ClientStats stats_;
};

absl::StatusOr<std::unique_ptr<Client>> Client::Create(const ClientOptions& options,
                                                       std::shared_ptr<Transport> transport) {
  if (transport == nullptr) return absl::InvalidArgumentError("transport: must not be null");
  if (absl::Status s = CheckOptions(options, transport->size()); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<Planner>> planner =
      PlannerRegistry::BuiltIn().CreateRunnable(options.planner, options.params);
  if (!planner.ok()) return planner.status();
  // Who shares a node (every rank's node name, numbered in order of the lowest rank on it), the
  // run id, and the settings every rank must share.
  const SharedSettings settings = SharedSettingsOf(options);
  std::array<int64_t, 3 + kSharedSettings> mine = {
      NameHash(options.node), options.run_id.empty() ? 0 : NameHash(options.run_id),
      static_cast<int64_t>(std::random_device{}()) << 32 | std::random_device{}()};
  std::copy(settings.begin(), settings.end(), mine.begin() + 3);
  constexpr size_t kWords = mine.size();
  std::vector<int64_t> all(kWords * static_cast<size_t>(transport->size()));
  if (absl::Status s = transport->AllGather(mine, all, options.collective_timeout); !s.ok()) return s;
  std::vector<int64_t> node_hashes;
  std::vector<int64_t> runs;
  for (size_t r = 0; r < all.size(); r += kWords) {
    node_hashes.push_back(all[r]);
    runs.insert(runs.end(), {all[r + 1], all[r + 2]});
    SharedSettings theirs;
    std::copy(all.begin() + static_cast<std::ptrdiff_t>(r + 3), all.begin() + static_cast<std::ptrdiff_t>(r + kWords),
              theirs.begin());
    if (absl::Status s = CheckSharedSettings(settings, theirs, static_cast<int>(r / kWords)); !s.ok()) return s;
  }
  absl::StatusOr<Topology> topology =
      Topology::FromNodes(NodeIdsByLowestRank<int64_t>(node_hashes), options.inter_node_cost);
  if (!topology.ok()) return topology.status();
  absl::StatusOr<std::shared_ptr<const Problem>> problem =
      ShareProblem({*std::move(topology), options.experts, options.slots_per_rank, options.expert_bytes});
  if (!problem.ok()) return problem.status();
  absl::StatusOr<std::string> run_id = AgreeOnRunId(options, runs);
  if (!run_id.ok()) return run_id.status();
  std::unique_ptr<DaemonLink> link;
  bool all_registered = false;
  if (!options.address.empty()) {
    absl::StatusOr<std::unique_ptr<DaemonLink>> made =
        DaemonLink::Create(options, transport->rank(), transport->size(), *std::move(run_id));
    if (!made.ok()) return made.status();
    link = *std::move(made);
    const absl::Status registered = link->Register(absl::Now() + options.connect_timeout);
    // No rank asks for a plan before every rank has registered (the daemon learns the topology
    // from the registrations and plans nothing before), and a refusal fails every rank.
    const int64_t outcome[1] = {registered.ok() ? kRegistered : IsRefusal(registered) ? kRefused : kUnreachable};
    std::vector<int64_t> outcomes(static_cast<size_t>(transport->size()));
    if (absl::Status s = transport->AllGather(outcome, outcomes, options.collective_timeout); !s.ok()) return s;
    if (outcome[0] == kRefused) {
      return absl::Status(registered.code(), absl::StrCat("the daemon at ", options.address,
                                                          " refused to register this rank: ", registered.message()));
    }
    std::vector<int> refused, unreachable;
    for (int r = 0; r < transport->size(); ++r) {
      if (outcomes[r] == kRefused) refused.push_back(r);
      if (outcomes[r] == kUnreachable) unreachable.push_back(r);
    }
    if (!refused.empty()) {
      return absl::FailedPreconditionError(absl::StrCat("the daemon at ", options.address,
                                                        " refused to register rank(s) ", absl::StrJoin(refused, ", "),
                                                        " (their errors say why)"));
    }
    all_registered = unreachable.empty();
    if (!registered.ok()) {
      link->Reconnect();
      Say(options, transport->rank(),
          absl::StrCat("the daemon at ", options.address, " did not answer within connect_timeout (",
                       registered.message(), "): planning locally while registering goes on"));
    }
  }
  auto impl = std::make_unique<Impl>(options, *transport, *std::move(problem), *std::move(planner), std::move(link),
                                     all_registered);
  return std::unique_ptr<Client>(new Client(options, std::move(transport), std::move(impl)));
}

Client::Client(ClientOptions options, std::shared_ptr<Transport> transport, std::unique_ptr<Impl> impl)
    : options_(std::move(options)), transport_(std::move(transport)), impl_(std::move(impl)) {}

Client::~Client() = default;

absl::StatusOr<LayerPlan> Client::PlanLayer(int64_t step, int layer, std::span<const int64_t> row) {
  return impl_->PlanLayer(step, layer, row);
}

absl::StatusOr<LayerPlan> Client::PlanLayerFromIds(int64_t step, int layer, const RouterIds& ids,
                                                   std::optional<uintptr_t> trainer_stream) {
  return impl_->PlanLayerFromIds(step, layer, ids, trainer_stream);
}

absl::StatusOr<std::optional<Plan>> Client::Placement(int64_t step, int layer, absl::Duration wait) {
  return impl_->Placement(step, layer, wait);
}

ClientStats Client::stats() const { return impl_->stats(); }

}  // namespace taot::client
