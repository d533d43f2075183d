// One training job as the daemon sees it: its ranks (who registered, on which node), the
// topology they make, the planner it uses, and its rounds once planning can start. gRPC-free.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "taot/planner/registry.h"
#include "taot/server/plan_rounds.h"

namespace taot::server {

// What a job tells the outside (the daemon's metrics) as it changes. Calls come from RPC
// threads, some under the job's locks: implementations must be thread-safe and quick.
class JobObserver {
 public:
  virtual ~JobObserver() = default;
  virtual void OnPlan(const RoundPlan& plan) = 0;
  virtual void OnRegistered(int ranks) = 0;
  virtual void OnPlanner(const std::string& name, uint64_t version) = 0;
  // One RPC's outcome.
  virtual void OnRequest(std::string_view rpc, const absl::Status& status) = 0;
};

struct JobConfig {
  std::string job_id;
  int world_size = 0;  // R, the expert-parallel ranks
  int experts = 0;
  int slots_per_rank = 2;
  int64_t expert_bytes = 0;
  double inter_node_cost = 3;
  // The node of each rank, when the configuration gives it; otherwise ranks are grouped by the
  // node name they register with, and planning waits until all have registered.
  std::optional<std::vector<int>> node_of_rank;
  absl::Duration round_timeout = absl::Milliseconds(100);
  // The load matrices of the rounds kept at most this many bytes (RoundsConfig::max_round_bytes).
  int64_t max_round_bytes = int64_t{1} << 30;
  std::string planner = "taot";
  PlannerParams params;
  JobObserver* observer = nullptr;  // not owned; outlives the job
  // Where planners come from by name; not owned, outlives the job.
  const PlannerRegistry* registry = &PlannerRegistry::BuiltIn();
  // Predictive mode from the start: every planned layer also places its next step.
  bool predictive = false;
  // Threads a batch of rounds is planned on (RoundsConfig::planning_threads).
  int planning_threads = 1;
};

// What a rank says about itself when it registers.
struct RankInfo {
  std::string job_id;
  int rank = 0;
  int world_size = 0;
  std::string node;  // host or node name; ranks sharing it share NVLink
  int local_rank = 0;
  std::string device;
  // The run of the job this rank belongs to (new at every trainer start or resume); empty: one run.
  std::string run_id;
  // The job's shape as the rank sees it; 0: not said.
  int experts = 0;
  int slots_per_rank = 0;
};

struct JobStatus {
  std::string job_id;
  std::string run_id;  // the current run's; empty before the first registration that names one
  int64_t runs = 0;    // runs started (a registration with a new run id starts one)
  int world_size = 0;
  int registered = 0;
  int nodes = 0;  // 0 until the topology is known
  std::string planner;
  uint64_t planner_version = 0;
  PlannerParams params;
  std::vector<std::shared_ptr<const RoundPlan>> recent;  // newest first
};

class Job {
 public:
  // Validates the configuration and the planner; errors name the field.
  static absl::StatusOr<std::unique_ptr<Job>> Create(JobConfig config);

  // Registering the same information again is fine (a rank retrying); a conflict (another rank
  // claims the id with other details, or the world size, experts or slots disagree with the
  // job's) is FAILED_PRECONDITION naming both values, and an unknown job NOT_FOUND; neither
  // changes anything. A registration with another run id than the current run's starts a new
  // run: the old run's ranks and rounds are forgotten (its waiting calls get the fallback), and
  // rounds start over from the new run's first step.
  absl::Status Register(const RankInfo& info);

  // The current run's rounds, once its topology is known; FAILED_PRECONDITION until every rank
  // registered, or when `run_id` (a report's; empty: the current run) names a run that was
  // replaced. Shared: a caller keeps the rounds alive while a new run replaces them.
  absl::StatusOr<std::shared_ptr<PlanRounds>> Rounds(std::string_view run_id = {});

  // The next round uses the new planner; on error the old one stays.
  absl::Status SetPlanner(const std::string& name, const PlannerParams& params);

  JobStatus Status() const;
  const std::string& id() const { return config_.job_id; }
  const JobConfig& config() const { return config_; }
  JobObserver* observer() const { return config_.observer; }

 private:
  explicit Job(JobConfig config) : config_(std::move(config)) {}
  // Creates the rounds from a known topology.
  absl::Status Start(std::vector<int> node_of_rank) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  JobConfig config_;
  mutable absl::Mutex mu_;
  // Forgets the current run's ranks and rounds for run `run_id`.
  absl::Status StartRun(const std::string& run_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  std::string run_id_ ABSL_GUARDED_BY(mu_);
  int64_t runs_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::optional<RankInfo>> ranks_ ABSL_GUARDED_BY(mu_);
  int registered_ ABSL_GUARDED_BY(mu_) = 0;
  std::string planner_ ABSL_GUARDED_BY(mu_);
  PlannerParams params_ ABSL_GUARDED_BY(mu_);
  uint64_t planner_version_ ABSL_GUARDED_BY(mu_) = 1;
  std::shared_ptr<PlanRounds> rounds_ ABSL_GUARDED_BY(mu_);
  int nodes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace taot::server
