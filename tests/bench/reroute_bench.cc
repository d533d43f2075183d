// One layer's reroute of one rank's 32,768 (token, choice) pairs (4,096 tokens x top-8), on the
// CPU: today's host path (taot::client::Reroute: destinations and send counts) against the
// data-plane kernel's CPU build (taot::kernels::RerouteCpu: the same plus virtual expert ids and
// the send order), per workload family and EP, as a ratio measured in the same run. A benchmark,
// not a test: prints a markdown table (docs/performance.md).
//   build/tests/bench/reroute_bench [--repeats 200]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "taot/client/reroute.h"
#include "taot/kernels/reroute.h"
#include "taot/planner/registry.h"
#include "taot/sim/case_generator.h"
#include "taot/tools/parse_or_exit.h"

namespace {

constexpr int64_t kPairs = 32768;

struct Family {
  const char* name;
  double imbalance;  // < 0: unset
  int hot_experts;
};

// The busiest source rank's pairs, scaled to kPairs, in a shuffled order.
std::vector<int32_t> PairsOf(const taot::LoadMatrix& load, int source) {
  int64_t total = 0;
  for (int e = 0; e < load.experts(); ++e) total += load.at(source, e);
  std::vector<int32_t> pairs;
  for (int e = 0; e < load.experts(); ++e) {
    pairs.insert(pairs.end(), static_cast<size_t>(load.at(source, e) * kPairs / std::max<int64_t>(total, 1)), e);
  }
  while (static_cast<int64_t>(pairs.size()) < kPairs)
    pairs.push_back(static_cast<int32_t>(pairs.size()) % load.experts());
  std::shuffle(pairs.begin(), pairs.end(), std::mt19937_64(static_cast<uint64_t>(source) + 1));
  return pairs;
}

template <typename F>
double BestMicros(int repeats, F&& f) {
  double best = 1e30;
  for (int i = 0; i < repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("reroute_bench: one rank's reroute of 32,768 pairs, host path against the kernel's CPU build");
  int repeats = 200;
  app.add_option("--repeats", repeats, "runs per measurement; the fastest counts (default 200)")
      ->check(CLI::Range(1, 100000));
  if (const std::optional<int> code = taot::cli::ParseOrExit(app, argc, argv, "reroute_bench")) return *code;
  const Family families[] = {
      {"zipf-like 50%", 0.5, 0}, {"one hot expert", -1, 1}, {"three hot", -1, 3}, {"near uniform 5%", 0.05, 0}};
  struct Shape {
    int ranks, experts;
  };
  std::printf("| family | EP | E | Reroute us | RerouteCpu us | RerouteCpu / Reroute |\n|---|---|---|---|---|---|\n");
  for (const Family& f : families) {
    for (const Shape s : {Shape{16, 128}, Shape{64, 256}, Shape{256, 256}}) {
      taot::sim::CaseOptions o;
      o.ranks = s.ranks;
      o.experts = s.experts;
      if (f.imbalance >= 0) o.imbalance = f.imbalance;
      o.hot_experts = f.hot_experts;
      const taot::PlanRequest request = taot::sim::GenerateCase(o)->request;
      const taot::Plan plan = *taot::PlannerRegistry::BuiltIn().Create("taot").value()->MakePlan(request);
      // The source with the most pairs moved to guests: the busiest reroute.
      std::vector<int64_t> moved(static_cast<size_t>(s.ranks), 0);
      for (const taot::Assignment& a : plan.assignments) moved[a.source] += a.tokens;
      const int source = static_cast<int>(std::max_element(moved.begin(), moved.end()) - moved.begin());
      const std::vector<int32_t> pairs = PairsOf(request.load, source);
      // Scaled counts may fall short of the plan's: plan on the scaled row instead of refusing.
      taot::Plan scaled = plan;
      std::vector<int64_t> routed(static_cast<size_t>(s.experts), 0);
      for (int32_t e : pairs) ++routed[e];
      for (taot::Assignment& a : scaled.assignments) {
        if (a.source != source) continue;
        a.tokens = std::min(a.tokens, routed[a.expert]);
        routed[a.expert] -= a.tokens;
      }
      std::erase_if(scaled.assignments, [](const taot::Assignment& a) { return a.tokens == 0; });
      const auto table = taot::client::RerouteTable::For(scaled, s.ranks, s.experts, source, request.slots_per_rank());
      if (!table.ok()) {
        std::fprintf(stderr, "%s\n", std::string(table.status().message()).c_str());
        return 1;
      }
      std::vector<int32_t> dest(pairs.size()), virtual_id(pairs.size());
      std::vector<int64_t> sends(static_cast<size_t>(s.ranks)), order(pairs.size());
      const taot::kernels::RouteTable view = table->view();
      std::vector<char> workspace(taot::kernels::RerouteWorkspaceBytes(kPairs, view));
      taot::kernels::RouteCheck check;
      const double host = BestMicros(repeats, [&] {
        if (!taot::client::Reroute(*table, pairs, dest, sends).ok()) std::abort();
      });
      const double kernel = BestMicros(repeats, [&] {
        taot::kernels::RerouteCpu(pairs.data(), kPairs, view, virtual_id.data(), dest.data(), sends.data(),
                                  order.data(), workspace.data(), &check);
      });
      if (check.first_bad_pair != kPairs || check.first_short_expert != s.experts) std::abort();
      std::printf("| %s | %d | %d | %.1f | %.1f | %.2f |\n", f.name, s.ranks, s.experts, host, kernel, kernel / host);
    }
  }
  return 0;
}
