#include "taot/sim/sequence_workload.h"

#include <cmath>
#include <numbers>

#include "absl/strings/str_cat.h"
#include "taot/planner/load_stats.h"
#include "taot/sim/routing.h"

namespace taot::sim {
namespace {

// Counter-based random numbers: a draw is a pure function of its coordinates, so any
// (step, layer, microbatch) is generated on demand, in any order, identically.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t Key(uint64_t seed, std::initializer_list<uint64_t> coords) {
  uint64_t h = Mix(seed);
  for (uint64_t c : coords) h = Mix(h ^ c);
  return h;
}

double Uniform(uint64_t key) { return (static_cast<double>(Mix(key) >> 11) + 0.5) * 0x1.0p-53; }

double Normal(uint64_t key) {
  return std::sqrt(-2.0 * std::log(Uniform(key))) * std::cos(2.0 * std::numbers::pi * Uniform(key ^ 0x5bd1e995ULL));
}

// Streams of draws, kept apart.
enum Stream : uint64_t { kStart = 1, kStep, kNoise, kBurstStart, kBurstPick };

}  // namespace

absl::Status ValidateSequenceOptions(const SequenceOptions& o) {
  auto bad = [](const char* name, auto value, const std::string& rule) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": ", rule, ", got ", value));
  };
  if (o.ranks <= 0 || o.ranks > 65536) return bad("ranks", o.ranks, "must be in [1, 65536]");
  if (o.experts <= 0 || o.experts % o.ranks != 0) {
    return bad("experts", o.experts, absl::StrCat("must be a positive multiple of ranks (", o.ranks, ")"));
  }
  if (o.top_k <= 0 || o.top_k > o.experts) return bad("top_k", o.top_k, "must be in [1, experts]");
  if (o.tokens_per_rank <= 0 || o.tokens_per_rank > (int64_t{1} << 30)) {
    return bad("tokens_per_rank", o.tokens_per_rank, "must be in [1, 2^30]");
  }
  if (o.layers <= 0 || o.layers > 1024) return bad("layers", o.layers, "must be in [1, 1024]");
  if (o.steps <= 0 || o.steps > 100000) return bad("steps", o.steps, "must be in [1, 100000]");
  if (o.microbatches <= 0 || o.microbatches > 1024) {
    return bad("microbatches", o.microbatches, "must be in [1, 1024]");
  }
  if (!std::isfinite(o.imbalance) || o.imbalance < 0 || o.imbalance > o.ranks - 1) {
    return bad("imbalance", o.imbalance, "must be a fraction in [0, ranks - 1]");
  }
  if (!std::isfinite(o.noise) || o.noise < 0 || o.noise > 5) return bad("noise", o.noise, "must be in [0, 5]");
  if (!std::isfinite(o.drift) || o.drift < 0 || o.drift > 1) return bad("drift", o.drift, "must be in [0, 1]");
  if (!std::isfinite(o.burst_rate) || o.burst_rate < 0 || o.burst_rate > 1) {
    return bad("burst_rate", o.burst_rate, "must be in [0, 1]");
  }
  if (o.burst_experts < 0 || o.burst_experts > o.experts) {
    return bad("burst_experts", o.burst_experts, "must be in [0, experts]");
  }
  if (o.burst_steps < 1) return bad("burst_steps", o.burst_steps, "must be >= 1");
  if (!std::isfinite(o.burst_factor) || o.burst_factor < 1) {
    return bad("burst_factor", o.burst_factor, "must be >= 1");
  }
  return absl::OkStatus();
}

namespace {

double ImbalanceOf(const LoadMatrix& load, int ranks) {
  std::vector<int64_t> rank_loads(static_cast<size_t>(ranks), 0);
  const int per_rank = load.experts() / ranks;
  for (int s = 0; s < load.sources(); ++s) {
    for (int e = 0; e < load.experts(); ++e) rank_loads[e / per_rank] += load.at(s, e);
  }
  return ImbalancePct(rank_loads);
}

}  // namespace

absl::StatusOr<std::unique_ptr<SequenceWorkload>> SequenceWorkload::Create(const SequenceOptions& options) {
  if (absl::Status s = ValidateSequenceOptions(options); !s.ok()) return s;
  std::unique_ptr<SequenceWorkload> w(new SequenceWorkload(options));
  const double want = options.imbalance * 100;
  for (int layer = 0; layer < options.layers; ++layer) {
    double lo = 0, hi = 20, skew = 0;
    const double floor_pct = ImbalanceOf(w->Route(0, layer, 0, 0, false), options.ranks);
    if (floor_pct > want + 0.5) {
      return absl::InvalidArgumentError(absl::StrCat("imbalance: ", options.imbalance,
                                                     " is below what the noise alone gives on layer ", layer, " (",
                                                     floor_pct, "%); lower noise"));
    }
    for (int it = 0; it < 60; ++it) {
      skew = (lo + hi) / 2;
      const double got = ImbalanceOf(w->Route(0, layer, 0, skew, false), options.ranks);
      if (std::abs(got - want) <= 0.1) break;
      (got < want ? lo : hi) = skew;
    }
    w->skew_.push_back(skew);
  }
  return w;
}

WorkloadShape SequenceWorkload::shape() const { return {o_.ranks, o_.experts, o_.layers, o_.steps, o_.microbatches}; }

std::vector<double> SequenceWorkload::BurstBoost(int step, int layer) const {
  std::vector<double> boost(static_cast<size_t>(o_.experts), 0.0);
  const double log_factor = std::log(o_.burst_factor);
  for (int start = std::max(0, step - o_.burst_steps + 1); start <= step; ++start) {
    const auto s = static_cast<uint64_t>(start), l = static_cast<uint64_t>(layer);
    if (Uniform(Key(o_.seed, {kBurstStart, l, s})) >= o_.burst_rate) continue;
    for (int i = 0; i < o_.burst_experts; ++i) {
      const uint64_t pick = Mix(Key(o_.seed, {kBurstPick, l, s, static_cast<uint64_t>(i)}));
      boost[pick % static_cast<uint64_t>(o_.experts)] = log_factor;
    }
  }
  return boost;
}

std::vector<double> SequenceWorkload::Popularity(int step, int layer) const {
  const auto l = static_cast<uint64_t>(layer);
  std::vector<double> z(static_cast<size_t>(o_.experts));
  const double innovation = std::sqrt(1.0 - o_.drift * o_.drift);
  for (int e = 0; e < o_.experts; ++e) {
    const auto ue = static_cast<uint64_t>(e);
    z[e] = Normal(Key(o_.seed, {kStart, l, ue}));
    for (int t = 1; t <= step; ++t) {
      z[e] = o_.drift * z[e] + innovation * Normal(Key(o_.seed, {kStep, l, static_cast<uint64_t>(t), ue}));
    }
  }
  return z;
}

LoadMatrix SequenceWorkload::Route(int step, int layer, int microbatch, double skew, bool bursts) const {
  const std::vector<double> z = Popularity(step, layer);
  const std::vector<double> boost = bursts ? BurstBoost(step, layer) : std::vector<double>(z.size(), 0.0);
  LoadMatrix load(o_.ranks, o_.experts);
  std::vector<double> w(static_cast<size_t>(o_.experts));
  for (int s = 0; s < o_.ranks; ++s) {
    for (int e = 0; e < o_.experts; ++e) {
      const double xi =
          Normal(Key(o_.seed, {kNoise, static_cast<uint64_t>(layer), static_cast<uint64_t>(step),
                               static_cast<uint64_t>(microbatch), static_cast<uint64_t>(s), static_cast<uint64_t>(e)}));
      w[e] = std::exp(skew * z[e] + boost[e] + o_.noise * xi - o_.noise * o_.noise / 2);
    }
    const std::vector<int64_t> counts = RouteTokens(w, o_.top_k, o_.tokens_per_rank);
    std::copy(counts.begin(), counts.end(), load.row(s).begin());
  }
  return load;
}

LoadMatrix SequenceWorkload::Load(int step, int layer, int microbatch) const {
  return Route(step, layer, microbatch, skew_[layer], true);
}

}  // namespace taot::sim
