// Plan latency of every planner on generated cases (google-benchmark; not a test).
//   build/tests/bench/planner_bench --benchmark_filter='taot/'
// Cases: EP16/E128, EP32/E128, EP64/E256, EP256/E1024, K = 2, 70% initial imbalance, seed 1;
// the same case object is planned again and again (the planner keeps no state between calls
// that changes its result). Compare planners within one run: the machine is noisy.
#include <benchmark/benchmark.h>

#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "taot/planner/layer_time.h"
#include "taot/planner/plan_hash.h"
#include "taot/planner/plan_validator.h"
#include "taot/planner/registry.h"
#include "taot/planner/run_planner.h"
#include "taot/planner/scorecard.h"
#include "taot/planner/split_over_replicas.h"
#include "taot/sim/case_generator.h"

namespace {

const taot::PlanRequest& Case(int ranks, int experts) {
  static std::map<std::pair<int, int>, taot::PlanRequest> cache;
  auto it = cache.find({ranks, experts});
  if (it == cache.end()) {
    taot::sim::CaseOptions o;
    o.ranks = ranks;
    o.experts = experts;
    o.imbalance = 0.7;
    o.seed = 1;
    it = cache.emplace(std::make_pair(ranks, experts), taot::sim::GenerateCase(o).value().request).first;
  }
  return it->second;
}

void BM_Plan(benchmark::State& state, const std::string& planner, const taot::PlannerParams& params, int ranks,
             int experts) {
  const taot::PlanRequest& request = Case(ranks, experts);
  std::unique_ptr<taot::Planner> p = taot::PlannerRegistry::BuiltIn().Create(planner, params).value();
  for (auto _ : state) {
    auto plan = p->MakePlan(request);
    benchmark::DoNotOptimize(plan);
  }
  state.SetLabel("EP" + std::to_string(ranks) + "/E" + std::to_string(experts));
}

const int kRegistered = [] {
  for (const std::string& name : taot::PlannerRegistry::BuiltIn().names()) {
    for (auto [r, e] : {std::pair{16, 128}, {32, 128}, {64, 256}, {256, 1024}}) {
      benchmark::RegisterBenchmark((name + "/EP" + std::to_string(r) + "/E" + std::to_string(e)).c_str(), BM_Plan, name,
                                   taot::PlannerParams{}, r, e)
          ->Unit(benchmark::kMicrosecond);
    }
  }
  // taot choosing its own target (several plans, each modelled) against taot at 2%.
  for (auto [r, e] : {std::pair{16, 128}, {32, 128}, {64, 256}}) {
    benchmark::RegisterBenchmark(("taot-auto/EP" + std::to_string(r) + "/E" + std::to_string(e)).c_str(), BM_Plan,
                                 "taot", taot::PlannerParams{{"target_imbalance_pct", "auto"}}, r, e)
        ->Unit(benchmark::kMicrosecond);
  }
  return 0;
}();

// The layer-time model alone, on taot's plan (what each auto candidate costs on top of planning).
void BM_LayerTime(benchmark::State& state, int ranks, int experts) {
  const taot::PlanRequest& request = Case(ranks, experts);
  const taot::Plan plan = taot::PlannerRegistry::BuiltIn().Create("taot").value()->MakePlan(request).value();
  const taot::ClusterSpec cluster;
  const taot::ModelSpec model = taot::ModelPreset("qwen3-30b-a3b").value();
  for (auto _ : state) benchmark::DoNotOptimize(taot::ModelLayerTime(cluster, model, request, plan, true));
}
BENCHMARK_CAPTURE(BM_LayerTime, EP16, 16, 128)->Unit(benchmark::kMicrosecond);

// The predictive mode's split over replicas placed in advance (here: taot's own replicas), with its
// buffers kept as a client keeps them.
void BM_SplitOverReplicas(benchmark::State& state, int ranks, int experts) {
  const taot::PlanRequest& request = Case(ranks, experts);
  const taot::Plan plan = taot::PlannerRegistry::BuiltIn().Create("taot").value()->MakePlan(request).value();
  taot::ReplicaSplitter splitter;
  for (auto _ : state) benchmark::DoNotOptimize(splitter.Split(request, plan.replicas));
}
BENCHMARK_CAPTURE(BM_SplitOverReplicas, EP16, 16, 128)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_SplitOverReplicas, EP64, 64, 256)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_LayerTime, EP64, 64, 256)->Unit(benchmark::kMicrosecond);

// What the daemon does around each plan (RunPlanner: check the request, plan, check the plan,
// canonicalize, score), against taot's MakePlan alone and the pieces one by one.
void BM_RunPlanner(benchmark::State& state, int ranks, int experts) {
  const taot::PlanRequest& request = Case(ranks, experts);
  std::unique_ptr<taot::Planner> p = taot::PlannerRegistry::BuiltIn().Create("taot").value();
  for (auto _ : state) benchmark::DoNotOptimize(taot::RunPlanner(*p, request));
}
void BM_ValidatePlan(benchmark::State& state, int ranks, int experts) {
  const taot::PlanRequest& request = Case(ranks, experts);
  const taot::Plan plan = taot::PlannerRegistry::BuiltIn().Create("taot").value()->MakePlan(request).value();
  for (auto _ : state) benchmark::DoNotOptimize(taot::ValidatePlan(request, plan));
}
void BM_ValidateRequest(benchmark::State& state, int ranks, int experts) {
  const taot::PlanRequest& request = Case(ranks, experts);
  for (auto _ : state) benchmark::DoNotOptimize(taot::ValidateRequest(request));
}
void BM_Score(benchmark::State& state, int ranks, int experts) {
  const taot::PlanRequest& request = Case(ranks, experts);
  const taot::Plan plan = taot::PlannerRegistry::BuiltIn().Create("taot").value()->MakePlan(request).value();
  for (auto _ : state) benchmark::DoNotOptimize(taot::Score(request, plan, 0));
}
void BM_PlanHash(benchmark::State& state, int ranks, int experts) {
  const taot::PlanRequest& request = Case(ranks, experts);
  const taot::Plan plan = taot::PlannerRegistry::BuiltIn().Create("taot").value()->MakePlan(request).value();
  for (auto _ : state) benchmark::DoNotOptimize(taot::PlanHash(plan));
}
BENCHMARK_CAPTURE(BM_Plan, taot_EP8_E256, "taot", taot::PlannerParams{}, 8, 256)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_RunPlanner, EP8_E256, 8, 256)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_RunPlanner, EP64_E256, 64, 256)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ValidateRequest, EP64_E256, 64, 256)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ValidatePlan, EP64_E256, 64, 256)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Score, EP64_E256, 64, 256)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_PlanHash, EP64_E256, 64, 256)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
