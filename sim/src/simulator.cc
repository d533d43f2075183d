#include "taot/sim/simulator.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include "absl/strings/str_cat.h"
#include "taot/planner/layer_time.h"
#include "taot/planner/load_stats.h"
#include "taot/planner/plan_hash.h"
#include "taot/planner/run_planner.h"
#include "taot/planner/split_over_replicas.h"

namespace taot::sim {
namespace {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// Attention and the shared experts of one layer and microbatch: the same under every plan.
double DenseForwardUs(const Scenario& sc, const LoadMatrix& load) {
  double picks = 0;
  for (int64_t n : load.data()) picks += static_cast<double>(n);
  const double tokens = picks / sc.model.top_k / load.sources();
  return tokens * (2.0 * sc.model.dense_params_per_layer + sc.model.attention_flops_per_token) /
         (sc.cluster.gemm_tflops * 1e6);
}

// Everything one plan adds to the totals.
struct Totals {
  double step_us = 0, forward_us = 0, stall_us = 0;
  double prefetch_us = 0, prefetch_exposed_us = 0;
  double before = 0, after = 0, weighted = 0, intra = 0, inter = 0;
  double chosen = 0;
  int chosen_count = 0;
  int plans = 0;
  std::vector<double> plan_us;  // critical-path planner calls

  void Add(const Scorecard& score, const LayerTime& t, double dense_us, const Plan& plan) {
    step_us += t.total_us() + 3.0 * dense_us;  // backward of the dense part: twice the forward
    forward_us += t.forward_us() + dense_us;
    stall_us += t.stall_us;
    before += score.imbalance_before_pct;
    after += score.imbalance_after_pct;
    weighted += score.weighted_cost;
    intra += score.intra_node_transfers;
    inter += score.inter_node_transfers;
    if (plan.chosen_target_pct) {
      chosen += *plan.chosen_target_pct;
      ++chosen_count;
    }
    ++plans;
  }
};

class Run {
 public:
  Run(const Scenario& sc, const Workload& w, Planner& planner, std::shared_ptr<const Problem> problem,
      const RequestObserver& observe)
      : sc_(sc),
        w_(w),
        shape_(w.shape()),
        planner_(planner),
        problem_(std::move(problem)),
        observe_(observe),
        predicted_(static_cast<size_t>(shape_.layers)),
        prefetch_us_(static_cast<size_t>(shape_.layers), 0.0) {}

  absl::StatusOr<SimResult> Go();

 private:
  PlanRequest Request(LoadMatrix load, std::vector<Replica> resident) const;
  // One microbatch of one layer; `layer_state` carries what the layer's earlier microbatches of
  // the step left: the resident replicas and the target a self-targeting planner chose.
  struct LayerState {
    std::vector<Replica> resident;
    std::optional<double> chosen_target;
    double first_forward_us = 0;  // the first microbatch's forward, dense part included
  };
  absl::Status Microbatch(int step, int layer, int mb, LayerState& layer_state, Totals* totals);
  absl::Status Predict(int step, int layer);

  const Scenario& sc_;
  const Workload& w_;
  const WorkloadShape shape_;
  Planner& planner_;
  const std::shared_ptr<const Problem> problem_;  // every microbatch's request shares it
  const RequestObserver& observe_;                // may be empty
  std::vector<std::vector<Replica>> predicted_;   // per layer, for the next step
  ReplicaSplitter splitter_;                      // the predictive stage's, as a client keeps one
  std::vector<double> prefetch_us_;               // per layer: moving the new replicas of predicted_
  double prefetch_intra_ = 0, prefetch_inter_ = 0;
};

PlanRequest Run::Request(LoadMatrix load, std::vector<Replica> resident) const {
  PlanRequest r;
  r.problem = problem_;
  r.load = std::move(load);
  r.resident = std::move(resident);
  return r;
}

absl::Status Run::Microbatch(int step, int layer, int mb, LayerState& state, Totals* totals) {
  const bool predictive = sc_.mode == PlanningMode::kPredictive;
  PlanRequest request = Request(w_.Load(step, layer, mb), predictive ? predicted_[layer] : state.resident);
  if (sc_.reuse_chosen_target) request.target_imbalance_pct = state.chosen_target;
  if (observe_) {
    if (absl::Status s = observe_(PlanPoint{step, layer, mb}, request); !s.ok()) return s;
  }
  ScoredPlan scored;
  // Each stage below ends as the client's does (client.cc): with the plan's hash, its identity.
  if (predictive) {
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<Plan> split = splitter_.Split(request, request.resident);
    if (split.ok()) scored.hash = PlanHash(*split);
    const double split_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    if (!split.ok()) return split.status();
    scored.plan = *std::move(split);
    scored.score = Score(request, scored.plan, split_us);
  } else {
    // What local planning puts on the critical path of the layer: the request checked, the plan
    // made, canonical and checked (CheckedPlan), and hashed. The scorecard is for these figures
    // only.
    const auto start = std::chrono::steady_clock::now();
    // Hashed as the client's is: in the check's walk.
    absl::StatusOr<Plan> planned = CheckedPlan(planner_, request, &scored.hash);
    const double stage_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    if (!planned.ok()) return planned.status();
    scored.plan = *std::move(planned);
    scored.score = Score(request, scored.plan, stage_us);
  }
  const Plan& plan = scored.plan;
  state.resident = plan.replicas;
  if (plan.chosen_target_pct) state.chosen_target = plan.chosen_target_pct;
  if (totals == nullptr) return absl::OkStatus();
  const LayerTime t = ModelLayerTime(sc_.cluster, sc_.model, request, plan, mb == shape_.microbatches - 1);
  const double dense_us = DenseForwardUs(sc_, request.load);
  if (mb == 0) state.first_forward_us = t.forward_us() + dense_us;
  totals->Add(scored.score, t, dense_us, plan);
  totals->plan_us.push_back(scored.score.plan_time_us);
  return absl::OkStatus();
}

// The predictive mode's placement for the next step: the planner on this step's loads of the
// layer (all microbatches summed), off the critical path; its new replicas are prefetched. It
// aims for no residual at all: prefetched weights never stall, and the more replicas the split
// has, the better it follows loads that drift from the prediction.
absl::Status Run::Predict(int step, int layer) {
  LoadMatrix sum(shape_.ranks, shape_.experts);
  for (int mb = 0; mb < shape_.microbatches; ++mb) {
    const LoadMatrix load = w_.Load(step, layer, mb);
    for (int s = 0; s < shape_.ranks; ++s) {
      for (int e = 0; e < shape_.experts; ++e) sum.at(s, e) += load.at(s, e);
    }
  }
  PlanRequest request = Request(std::move(sum), predicted_[layer]);
  request.target_imbalance_pct = 0;
  absl::StatusOr<ScoredPlan> scored = RunPlanner(planner_, request);
  if (!scored.ok()) return scored.status();
  if (step + 1 < shape_.steps) {
    prefetch_intra_ += scored->score.intra_node_transfers;
    prefetch_inter_ += scored->score.inter_node_transfers;
  }
  // The weights that move for the next step: replicas the last placement did not have.
  std::vector<Replica> moving;
  const std::vector<Replica>& before = predicted_[layer];
  for (const Replica& r : scored->plan.replicas) {
    if (std::find(before.begin(), before.end(), r) == before.end()) moving.push_back(r);
  }
  prefetch_us_[layer] = WeightMovesUs(sc_.cluster, sc_.model, request, moving);
  predicted_[layer] = scored->plan.replicas;
  return absl::OkStatus();
}

absl::StatusOr<SimResult> Run::Go() {
  const int first_measured = shape_.steps > 1 ? 1 : 0;
  Totals totals;
  for (int step = 0; step < shape_.steps; ++step) {
    Totals* measure = step >= first_measured ? &totals : nullptr;
    // Predictive mode: each layer's prefetch starts after the last optimizer step and has the
    // forward pass of the layers before it to hide in (each simulated layer standing for
    // moe_layers / layers of the model's).
    double before_us = 0;
    for (int layer = 0; layer < shape_.layers; ++layer) {
      if (sc_.mode == PlanningMode::kPredictive && measure != nullptr) {
        const double window_us = before_us * sc_.model.moe_layers / shape_.layers;
        const double exposed_us = std::max(0.0, prefetch_us_[layer] - window_us);
        measure->prefetch_us += prefetch_us_[layer];
        measure->prefetch_exposed_us += exposed_us;
        measure->step_us += exposed_us;
        measure->stall_us += exposed_us;
      }
      LayerState state;
      for (int mb = 0; mb < shape_.microbatches; ++mb) {
        if (absl::Status s = Microbatch(step, layer, mb, state, measure); !s.ok()) {
          return absl::Status(s.code(),
                              absl::StrCat("step ", step, ", layer ", layer, ", microbatch ", mb, ": ", s.message()));
        }
      }
      before_us += state.first_forward_us;
      if (sc_.mode == PlanningMode::kPredictive) {
        if (absl::Status s = Predict(step, layer); !s.ok()) return s;
      }
    }
  }
  // The workload's layers stand for all the model's MoE layers.
  const double steps = shape_.steps - first_measured;
  const double per_step = static_cast<double>(sc_.model.moe_layers) / shape_.layers / steps;
  const double per_plan = 1.0 / totals.plans;
  SimResult r;
  r.plan_time_us = Median(totals.plan_us);
  if (sc_.mode == PlanningMode::kRemote) r.plan_time_us += sc_.rpc_us;
  r.plan_ms = r.plan_time_us * totals.plans * per_step / 1e3;
  r.step_ms = totals.step_us * per_step / 1e3 + r.plan_ms;
  r.forward_ms = (totals.forward_us * per_step + r.plan_ms * 1e3) / shape_.microbatches / 1e3;
  r.stall_ms = totals.stall_us * per_step / 1e3;
  r.imbalance_before_pct = totals.before * per_plan;
  r.imbalance_after_pct = totals.after * per_plan;
  r.transfers_intra = (totals.intra + prefetch_intra_) * per_step;
  r.transfers_inter = (totals.inter + prefetch_inter_) * per_step;
  r.plan_weighted_cost = totals.weighted * per_plan;
  r.plan_transfers_intra = totals.intra * per_plan;
  r.plan_transfers_inter = totals.inter * per_plan;
  if (totals.chosen_count > 0) r.chosen_target_pct = totals.chosen / totals.chosen_count;
  r.prefetch_ms = totals.prefetch_us * per_step / 1e3;
  r.prefetch_exposed_ms = totals.prefetch_exposed_us * per_step / 1e3;
  return r;
}

}  // namespace

absl::StatusOr<SimResult> Simulate(const Scenario& scenario, const Workload& workload, Planner& planner,
                                   const RequestObserver& observe) {
  const WorkloadShape shape = workload.shape();
  if (shape.ranks != scenario.ranks) {
    return absl::InvalidArgumentError(
        absl::StrCat("workload: has ", shape.ranks, " ranks but the scenario has ", scenario.ranks));
  }
  absl::StatusOr<Topology> topology = Topology::Uniform(
      scenario.ranks, std::min(scenario.cluster.gpus_per_node, scenario.ranks), scenario.inter_node_cost);
  if (!topology.ok()) return topology.status();
  absl::StatusOr<std::shared_ptr<const Problem>> problem =
      ShareProblem({*std::move(topology), shape.experts, scenario.slots_per_rank, scenario.model.expert_bytes()});
  if (!problem.ok()) return problem.status();
  return Run(scenario, workload, planner, *std::move(problem), observe).Go();
}

}  // namespace taot::sim
