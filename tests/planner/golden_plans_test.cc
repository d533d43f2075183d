// Every built-in planner's plans on a fixed set of workload families, compared with the plans
// recorded in tests/data/golden_plans.txt: a refactoring that changes any plan, or any figure
// of its scorecard, fails here. The families are those the benchmarks use (zipf-like skew, one
// very hot expert, several hot experts, a burst of R/8 experts, near-uniform; small and large
// EP), plus a second microbatch that reuses the first one's replicas, an asymmetric cost matrix
// and a target.
//
// To record new plans after a change that is meant to change them (say why in the commit):
//   TAOT_GOLDEN_UPDATE=$PWD/tests/data/golden_plans.txt
//       build/tests/planner/taot_planner_tests --gtest_filter='GoldenPlans.*'
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "generated_cases.h"
#include "taot/planner/plan_hash.h"
#include "taot/planner/registry.h"
#include "taot/planner/run_planner.h"
#include "test_requests.h"

namespace taot {
namespace {

using testing::Generated;
using testing::Reshaped;

struct NamedCase {
  std::string name;
  PlanRequest request;
};

// An asymmetric cost matrix over three nodes of four ranks each: node 2 is far from node 0.
Topology SkewedMatrix() {
  const std::vector<int> node_of_rank = {0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2};
  const int r = static_cast<int>(node_of_rank.size());
  std::vector<double> cost(static_cast<size_t>(r) * r, 0.0);
  for (int from = 0; from < r; ++from) {
    for (int to = 0; to < r; ++to) {
      if (from == to) continue;
      const int a = node_of_rank[from], b = node_of_rank[to];
      double c = a == b ? 1.0 : 3.0;
      if (a == 0 && b == 2) c = 7.5;
      if (a == 2 && b == 0) c = 5.0;
      cost[static_cast<size_t>(from) * r + to] = c;
    }
  }
  return Topology::FromMatrix(node_of_rank, cost).value();
}

std::vector<NamedCase> Cases() {
  std::vector<NamedCase> cases;
  for (auto [ranks, experts] : {std::pair{16, 128}, {64, 256}}) {
    const std::string ep = absl::StrFormat("ep%d-e%d", ranks, experts);
    cases.push_back({"zipf-" + ep, Generated(ranks, experts, 0.7, 0, 10, 1)});
    cases.push_back({"one-hot-" + ep, Generated(ranks, experts, 0, 1, 60, 2)});
    cases.push_back({"several-hot-" + ep, Generated(ranks, experts, 0, 4, 12, 3)});
    cases.push_back({"uniform-" + ep, Generated(ranks, experts, 0, 0, 10, 4)});
  }
  cases.push_back({"zipf-ep256-e1024", Generated(256, 1024, 0.7, 0, 10, 5)});
  // A burst of R/8 experts: exporting nodes with several carriers, whose handoff with pieces
  // goes before their plain trials.
  cases.push_back({"eight-hot-ep64-e256", Generated(64, 256, 0, 8, 10, 8)});

  PlanRequest k4 = Generated(32, 128, 0, 2, 20, 6);
  k4 = Reshaped(k4, [](Problem& p) { p.slots_per_rank = 4; });
  k4.target_imbalance_pct = 5.0;
  cases.push_back({"k4-target5-ep32-e128", k4});

  PlanRequest matrix = Generated(12, 48, 0.8, 0, 10, 7);
  matrix = Reshaped(matrix, [](Problem& p) { p.topology = SkewedMatrix(); });
  cases.push_back({"matrix-ep12-e48", matrix});
  return cases;
}

// One line per (planner, case): the plan's hash and every scorecard figure but the time.
std::string Record(const std::string& planner, const std::string& name, const ScoredPlan& out) {
  const Scorecard& s = out.score;
  return absl::StrFormat(
      "%s %s hash=%016x replicas=%d assignments=%d missed=%d chosen=%s before=%.17g after=%.17g "
      "target=%.17g met=%d intra=%d inter=%d reused=%d cost=%.17g bytes_intra=%d bytes_inter=%d "
      "tok_local=%d tok_intra=%d tok_inter=%d",
      planner, name, PlanHash(out.plan), out.plan.replicas.size(), out.plan.assignments.size(), out.plan.target_missed,
      out.plan.chosen_target_pct ? absl::StrFormat("%.17g", *out.plan.chosen_target_pct) : "-", s.imbalance_before_pct,
      s.imbalance_after_pct, s.target_imbalance_pct, s.target_met, s.intra_node_transfers, s.inter_node_transfers,
      s.reused_replicas, s.weighted_cost, s.bytes_moved_intra_node, s.bytes_moved_inter_node, s.tokens_local,
      s.tokens_intra_node, s.tokens_inter_node);
}

std::vector<std::string> RecordAll() {
  std::vector<std::string> lines;
  const PlannerRegistry& registry = PlannerRegistry::BuiltIn();
  std::vector<std::pair<std::string, PlannerParams>> planners;
  for (const std::string& name : registry.names()) planners.push_back({name, {}});
  planners.push_back({"taot", {{"target_imbalance_pct", "auto"}}});
  for (const NamedCase& c : Cases()) {
    for (const auto& [name, params] : planners) {
      auto planner = registry.Create(name, params).value();
      const ScoredPlan first = RunPlanner(*planner, c.request).value();
      const std::string label = params.empty() ? name : name + "(auto)";
      lines.push_back(Record(label, c.name, first));
      // The next microbatch of the same step: its load shifts and the first plan's replicas
      // are resident, so planners that reuse replicas show it.
      PlanRequest next = c.request;
      next.resident = first.plan.replicas;
      for (int s = 0; s < next.ranks(); ++s) {
        auto row = next.load.row(s);
        for (size_t e = 0; e + 1 < row.size(); e += 2) std::swap(row[e], row[e + 1]);
      }
      lines.push_back(Record(label, c.name + "+resident", RunPlanner(*planner, next).value()));
    }
  }
  return lines;
}

TEST(GoldenPlans, EveryPlannerMatchesTheRecordedPlans) {
  const std::vector<std::string> lines = RecordAll();
  if (const char* update = std::getenv("TAOT_GOLDEN_UPDATE")) {
    std::ofstream out(update);
    for (const std::string& line : lines) out << line << "\n";
    ASSERT_TRUE(out.good()) << "could not write " << update;
    GTEST_SKIP() << "recorded " << lines.size() << " plans in " << update;
  }
  std::ifstream in(TAOT_TEST_DATA_DIR "/golden_plans.txt");
  ASSERT_TRUE(in.good()) << "missing " TAOT_TEST_DATA_DIR "/golden_plans.txt";
  std::vector<std::string> golden;
  for (std::string line; std::getline(in, line);) golden.push_back(line);
  ASSERT_EQ(lines.size(), golden.size()) << "the set of planners or cases changed";
  for (size_t i = 0; i < lines.size(); ++i) EXPECT_EQ(lines[i], golden[i]);
}

}  // namespace
}  // namespace taot
