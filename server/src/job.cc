#include "taot/server/job.h"

#include <map>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "taot/server/log.h"

namespace taot::server {

absl::StatusOr<std::unique_ptr<Job>> Job::Create(JobConfig config) {
  if (config.job_id.empty()) return absl::InvalidArgumentError("job_id: must not be empty");
  if (config.world_size <= 0 || config.world_size > 65536) {
    return absl::InvalidArgumentError(absl::StrCat("world_size: must be in [1, 65536], got ", config.world_size));
  }
  if (config.experts <= 0 || config.experts % config.world_size != 0) {
    return absl::InvalidArgumentError(absl::StrCat("experts: must be a positive multiple of world_size (",
                                                   config.world_size, "), got ", config.experts));
  }
  if (config.node_of_rank && static_cast<int>(config.node_of_rank->size()) != config.world_size) {
    return absl::InvalidArgumentError(absl::StrCat("node_of_rank: must have world_size = ", config.world_size,
                                                   " entries, got ", config.node_of_rank->size()));
  }
  // The planner and its parameters are checked now, not at the first round.
  if (auto planner = config.registry->CreateRunnable(config.planner, config.params); !planner.ok()) {
    return planner.status();
  }
  std::unique_ptr<Job> job(new Job(config));
  absl::MutexLock lock(&job->mu_);
  job->planner_ = config.planner;
  job->params_ = config.params;
  if (config.observer != nullptr) config.observer->OnPlanner(config.planner, job->planner_version_);
  if (absl::Status s = job->StartRun(""); !s.ok()) return s;
  return job;
}

absl::Status Job::StartRun(const std::string& run_id) {
  run_id_ = run_id;
  ++runs_;
  ranks_.assign(static_cast<size_t>(config_.world_size), std::nullopt);
  registered_ = 0;
  nodes_ = 0;
  if (rounds_) {
    // The old rounds' planner is the truth (it may have dropped a failing one): the new run goes on
    // with it, and its version keeps counting up.
    PlannerInUse in_use = rounds_->planner();
    planner_ = std::move(in_use.name);
    params_ = std::move(in_use.params);
    planner_version_ = in_use.version;
  }
  // Dropping the old rounds answers their waiting calls with the fallback; callers still inside
  // them hold them alive until they are done.
  rounds_.reset();
  if (config_.node_of_rank) return Start(*config_.node_of_rank);
  return absl::OkStatus();
}

absl::Status Job::Start(std::vector<int> node_of_rank) {
  absl::StatusOr<Topology> topology = Topology::FromNodes(std::move(node_of_rank), config_.inter_node_cost);
  if (!topology.ok()) return topology.status();
  // Made once per run: every round of the run shares it.
  absl::StatusOr<std::shared_ptr<const Problem>> problem =
      ShareProblem({*std::move(topology), config_.experts, config_.slots_per_rank, config_.expert_bytes});
  if (!problem.ok()) return problem.status();
  RoundsConfig rc;
  rc.problem = *std::move(problem);
  rc.round_timeout = config_.round_timeout;
  rc.max_round_bytes = config_.max_round_bytes;
  rc.registry = config_.registry;
  rc.place = config_.predictive;
  rc.planning_threads = config_.planning_threads;
  if (config_.observer != nullptr) {
    rc.on_plan = [observer = config_.observer](const RoundPlan& p) { observer->OnPlan(p); };
    rc.on_planner_dropped = [observer = config_.observer](const std::string& name, uint64_t version) {
      observer->OnPlanner(name, version);
    };
  }
  absl::StatusOr<std::unique_ptr<PlanRounds>> rounds = PlanRounds::Create(rc, planner_, params_, planner_version_);
  if (!rounds.ok()) return rounds.status();
  nodes_ = rc.problem->topology.nodes();
  rounds_ = *std::move(rounds);
  return absl::OkStatus();
}

absl::Status Job::Register(const RankInfo& info) {
  if (info.job_id != config_.job_id) {
    return absl::NotFoundError(
        absl::StrCat("job_id: unknown job '", info.job_id, "' (this daemon serves '", config_.job_id, "')"));
  }
  for (auto [field, said, have] : {std::tuple{"world_size", info.world_size, config_.world_size},
                                   {"experts", info.experts, config_.experts},
                                   {"slots_per_rank", info.slots_per_rank, config_.slots_per_rank}}) {
    // world_size is always said; the others only by clients that know them.
    if (said != have && (said != 0 || std::string_view(field) == "world_size")) {
      return absl::FailedPreconditionError(absl::StrCat(field, ": rank ", info.rank, " has ", said,
                                                        ", the daemon's job '", config_.job_id, "' has ", have));
    }
  }
  if (info.rank < 0 || info.rank >= config_.world_size) {
    return absl::InvalidArgumentError(absl::StrCat("rank: must be in [0, ", config_.world_size, "), got ", info.rank));
  }
  if (info.node.empty()) return absl::InvalidArgumentError("node: must name the rank's host or node");
  absl::MutexLock lock(&mu_);
  if (info.run_id != run_id_) {
    if (registered_ > 0) {
      Log(LogLevel::kInfo, "a new run of the job: its ranks and rounds start over",
          {{"job", config_.job_id}, {"run", info.run_id}, {"previous_run", run_id_}});
    }
    if (absl::Status s = StartRun(info.run_id); !s.ok()) return s;
  }
  std::optional<RankInfo>& slot = ranks_[info.rank];
  if (slot) {
    if (slot->node != info.node || slot->local_rank != info.local_rank || slot->device != info.device) {
      return absl::FailedPreconditionError(absl::StrCat("rank ", info.rank, " is already registered from node '",
                                                        slot->node, "' (local rank ", slot->local_rank,
                                                        "); a second rank cannot claim it"));
    }
    return absl::OkStatus();
  }
  slot = info;
  ++registered_;
  if (config_.observer != nullptr) config_.observer->OnRegistered(registered_);
  if (registered_ < config_.world_size || rounds_) return absl::OkStatus();
  // Everyone is in.
  std::vector<std::string> node_names;
  for (const std::optional<RankInfo>& r : ranks_) node_names.push_back(r->node);
  return Start(NodeIdsByLowestRank<std::string>(node_names));
}

absl::StatusOr<std::shared_ptr<PlanRounds>> Job::Rounds(std::string_view run_id) {
  absl::MutexLock lock(&mu_);
  if (!run_id.empty() && run_id != run_id_) {
    return absl::FailedPreconditionError(absl::StrCat("run_id: run '", std::string(run_id), "' of job ", config_.job_id,
                                                      " was replaced by run '", run_id_, "'; register again"));
  }
  if (!rounds_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job ", config_.job_id, " is waiting for its ranks: ", registered_, " of ", config_.world_size, " registered"));
  }
  return rounds_;
}

absl::Status Job::SetPlanner(const std::string& name, const PlannerParams& params) {
  absl::MutexLock lock(&mu_);
  if (rounds_) {
    if (absl::Status s = rounds_->SetPlanner(name, params); !s.ok()) return s;
    planner_version_ = rounds_->planner().version;
  } else {
    if (auto planner = config_.registry->CreateRunnable(name, params); !planner.ok()) return planner.status();
    ++planner_version_;
  }
  planner_ = name;
  params_ = params;
  if (config_.observer != nullptr) config_.observer->OnPlanner(name, planner_version_);
  return absl::OkStatus();
}

JobStatus Job::Status() const {
  absl::MutexLock lock(&mu_);
  JobStatus s;
  s.job_id = config_.job_id;
  s.run_id = run_id_;
  s.runs = runs_;
  s.world_size = config_.world_size;
  s.registered = registered_;
  s.nodes = nodes_;
  s.planner = planner_;
  s.planner_version = planner_version_;
  s.params = params_;
  if (rounds_) {
    // The rounds' planner is the truth: it may have dropped a failing one for its predecessor.
    PlannerInUse in_use = rounds_->planner();
    s.planner = std::move(in_use.name);
    s.planner_version = in_use.version;
    s.params = std::move(in_use.params);
    s.recent = rounds_->RecentPlans(16);
  }
  return s;
}

}  // namespace taot::server
