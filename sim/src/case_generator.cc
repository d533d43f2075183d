#include "taot/sim/case_generator.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "taot/planner/load_stats.h"
#include "taot/sim/routing.h"

namespace taot::sim {
namespace {

// Standard normal draws from a portable engine (std::normal_distribution's algorithm is
// implementation-defined, so it would make cases differ between standard libraries).
class Normal {
 public:
  explicit Normal(uint64_t seed) : engine_(seed) {}
  double operator()() {
    const double u1 = Uniform();
    const double u2 = Uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  }
  uint64_t Index(uint64_t n) { return engine_() % n; }

 private:
  double Uniform() { return (static_cast<double>(engine_() >> 11) + 0.5) * 0x1.0p-53; }
  std::mt19937_64 engine_;
};

// The random draws of a case, fixed before the skew is tuned so the imbalance moves smoothly.
struct Draws {
  std::vector<double> z;      // per expert
  std::vector<double> noise;  // per source x expert
  std::vector<int> hot;
};

Draws Draw(const CaseOptions& o) {
  Normal normal(o.seed);
  Draws d;
  d.z.resize(static_cast<size_t>(o.experts));
  for (double& z : d.z) z = normal();
  d.noise.resize(static_cast<size_t>(o.ranks) * o.experts);
  for (double& x : d.noise) x = normal();
  std::vector<int> ids(static_cast<size_t>(o.experts));
  std::iota(ids.begin(), ids.end(), 0);
  for (int i = 0; i < o.hot_experts; ++i) {
    std::swap(ids[i], ids[i + normal.Index(static_cast<uint64_t>(o.experts - i))]);
  }
  d.hot.assign(ids.begin(), ids.begin() + o.hot_experts);
  std::sort(d.hot.begin(), d.hot.end());
  return d;
}

LoadMatrix Build(const CaseOptions& o, const Draws& d, double skew) {
  LoadMatrix load(o.ranks, o.experts);
  std::vector<double> w(static_cast<size_t>(o.experts));
  for (int s = 0; s < o.ranks; ++s) {
    for (int e = 0; e < o.experts; ++e) {
      double base = std::exp(skew * d.z[e]);
      if (std::binary_search(d.hot.begin(), d.hot.end(), e)) base *= o.hot_factor;
      w[e] = base * std::exp(o.noise * d.noise[static_cast<size_t>(s) * o.experts + e] - o.noise * o.noise / 2);
    }
    const std::vector<int64_t> counts = RouteTokens(w, o.top_k, o.tokens_per_rank);
    std::copy(counts.begin(), counts.end(), load.row(s).begin());
  }
  return load;
}

absl::Status CheckOptions(const CaseOptions& o) {
  auto bad = [](const std::string& name, auto value, const std::string& rule) {
    return absl::InvalidArgumentError(absl::StrCat("--", name, ": ", rule, ", got ", value));
  };
  if (o.ranks <= 0 || o.ranks > kMaxRanks) {
    return bad("ranks", o.ranks, absl::StrCat("must be in [1, ", kMaxRanks, "]"));
  }
  if (o.experts <= 0 || o.experts % o.ranks != 0) {
    return bad("experts", o.experts, absl::StrCat("must be a positive multiple of ranks (", o.ranks, ")"));
  }
  if (absl::Status s = CheckRequestSize(o.ranks, o.experts, "--ranks", "--experts"); !s.ok()) return s;
  if (o.ranks_per_node <= 0) return bad("ranks-per-node", o.ranks_per_node, "must be >= 1");
  if (!std::isfinite(o.inter_node_cost) || o.inter_node_cost < kIntraNodeCost) {
    return bad("inter-node-cost", o.inter_node_cost, "must be a finite number >= 1 (the intra-node cost)");
  }
  if (o.slots_per_rank < 0 || o.slots_per_rank > o.experts) {
    return bad("slots", o.slots_per_rank, absl::StrCat("must be in [0, experts = ", o.experts, "]"));
  }
  if (o.expert_bytes < 0 || o.expert_bytes > (int64_t{1} << 50)) {
    return bad("expert-bytes", o.expert_bytes, "must be in [0, 2^50]");
  }
  if (o.top_k <= 0 || o.top_k > o.experts) {
    return bad("top-k", o.top_k, absl::StrCat("must be in [1, experts = ", o.experts, "]"));
  }
  if (o.tokens_per_rank <= 0 || o.tokens_per_rank > (int64_t{1} << 30)) {
    return bad("tokens-per-rank", o.tokens_per_rank, "must be in [1, 2^30]");
  }
  if (o.imbalance && (!std::isfinite(*o.imbalance) || *o.imbalance < 0 || *o.imbalance > o.ranks - 1)) {
    return bad("imbalance", *o.imbalance, absl::StrCat("must be a fraction in [0, ranks - 1 = ", o.ranks - 1, "]"));
  }
  if (!std::isfinite(o.noise) || o.noise < 0 || o.noise > 5) return bad("noise", o.noise, "must be in [0, 5]");
  if (!std::isfinite(o.skew) || o.skew < 0 || o.skew > 20) return bad("skew", o.skew, "must be in [0, 20]");
  if (o.hot_experts < 0 || o.hot_experts > o.experts) {
    return bad("hot-experts", o.hot_experts, "must be in [0, experts]");
  }
  if (!std::isfinite(o.hot_factor) || o.hot_factor < 1 || o.hot_factor > 1e6) {
    return bad("hot-factor", o.hot_factor, "must be in [1, 1e6]");
  }
  if (o.target_imbalance_pct &&
      (!std::isfinite(*o.target_imbalance_pct) || *o.target_imbalance_pct < 0 || *o.target_imbalance_pct > 1e6)) {
    return bad("target-imbalance", *o.target_imbalance_pct, "must be in [0, 1e6]");
  }
  return absl::OkStatus();
}

double ImbalanceOf(const CaseOptions& o, const Draws& d, double skew, const std::shared_ptr<const Problem>& problem) {
  PlanRequest probe;
  probe.problem = problem;
  probe.load = Build(o, d, skew);
  return ImbalancePct(RankLoadsBefore(probe));
}

}  // namespace

absl::StatusOr<GeneratedCase> GenerateCase(const CaseOptions& o) {
  if (absl::Status s = CheckOptions(o); !s.ok()) return s;
  absl::StatusOr<Topology> topology = Topology::Uniform(o.ranks, o.ranks_per_node, o.inter_node_cost);
  if (!topology.ok()) return topology.status();
  absl::StatusOr<std::shared_ptr<const Problem>> problem =
      ShareProblem({*std::move(topology), o.experts, o.slots_per_rank, o.expert_bytes});
  if (!problem.ok()) return problem.status();
  const Draws draws = Draw(o);
  double skew = o.skew;
  if (o.imbalance) {
    const double want = *o.imbalance * 100.0;
    double lo = 0, hi = 20;
    const double floor_pct = ImbalanceOf(o, draws, lo, *problem);
    if (floor_pct > want + o.tolerance_pp) {
      return absl::InvalidArgumentError(absl::StrCat("--imbalance: ", *o.imbalance,
                                                     " is below what the noise and hot experts alone give (", floor_pct,
                                                     "%); lower --noise or --hot-factor"));
    }
    // Aim well inside the tolerance so the final rebuild lands in it.
    for (int it = 0; it < 80; ++it) {
      skew = (lo + hi) / 2;
      const double got = ImbalanceOf(o, draws, skew, *problem);
      if (std::abs(got - want) <= o.tolerance_pp / 4) break;
      (got < want ? lo : hi) = skew;
    }
  }
  GeneratedCase out;
  out.request.problem = *std::move(problem);
  out.request.target_imbalance_pct = o.target_imbalance_pct;
  out.request.load = Build(o, draws, skew);
  out.imbalance_pct = ImbalancePct(RankLoadsBefore(out.request));
  out.skew = skew;
  out.hot_experts = draws.hot;
  if (o.imbalance && std::abs(out.imbalance_pct - *o.imbalance * 100.0) > o.tolerance_pp) {
    return absl::InvalidArgumentError(absl::StrCat("--imbalance: could not reach ", *o.imbalance * 100.0, "% within ",
                                                   o.tolerance_pp, " pp (closest ", out.imbalance_pct,
                                                   "%); the top-k cap limits how hot one rank can get"));
  }
  if (absl::Status s = ValidateRequest(out.request); !s.ok()) return s;
  return out;
}

std::string CaseMetaJson(const CaseOptions& o, const GeneratedCase& g) {
  nlohmann::json meta = {
      {"generator", "taot gen"},
      {"seed", o.seed},
      {"top_k", o.top_k},
      {"tokens_per_rank", o.tokens_per_rank},
      {"noise", o.noise},
      {"skew", g.skew},
      {"imbalance_pct", g.imbalance_pct},
  };
  if (o.imbalance) meta["imbalance_target"] = *o.imbalance;
  if (o.hot_experts > 0) {
    meta["hot_experts"] = g.hot_experts;
    meta["hot_factor"] = o.hot_factor;
  }
  return meta.dump();
}

}  // namespace taot::sim
