// TAOT as its code does it: a port of Zachary-wW/Loong-Megatron at
// 3a487c1cd33afc157f7b9a06394d9562b26dbe80, megatron/core/transformer/moe/offloading_planner.py,
// the PyTorch path (not the Triton kernels) of `_get_sinkhorn_statics` and
// `gen_assignment_sinkhorn` (phases 1 and 2), then `auction_allocation` (phase 3): the module's
// `assignment_algorithm = "auction"` branch, with ranks_per_node taken from our topology's nodes,
// topo_inter_cost = λ, the inter-node bonus 1/λ in both places, 50 Sinkhorn iterations,
// epsilon = 1 and 300 auction rounds (docs/planners.md, tests/data/peers).
//
// 1. Rank level: each rank's load above (hot) and below (cold) the mean; hot supply scaled down
//    to the total demand; Sinkhorn on the Gibbs kernel M = exp(-1/λ) inside a node, exp(-1)
//    across; each column of the plan T capped to its rank's demand. The hint of expert e on
//    rank r is T[home(e)][r] / max(excess of home(e), 1).
// 2. Expert level: a hot rank's experts sorted by load, ascending; an expert's spill is what its
//    prefix sum puts above the mean. K rounds of R inner steps: each cold rank not yet matched in
//    the round proposes the expert of best score min(spill, spare) + α·bonus + 0.1·α·hint (α =
//    mean / experts per rank; bonus 1 inside the home's node, 1/λ across, 0 at home); each
//    proposed expert takes its best proposer and gives it min(spill, spare). Only the rank drops
//    out of the round: the expert may be matched again in a later step of the same round, so one
//    expert can land on up to R - 1 ranks in one round. A rank gets at most one expert per round
//    and never one it already holds. Round k of rank r is slot r·K + k; its token amount is cut
//    down to an integer (a slot whose amount is below one token stays empty).
// 3. Token level: an auction over the slots: each slot asks the source rank of best bonus - price
//    (1 from the slot's node, 1/λ from elsewhere, 0 from the slot's own rank) that still has
//    tokens of its expert; each source serves the best slot that asked it, min(its tokens, the
//    slot's need), and a source that gave gets 1 dearer, for every expert alike. 300 rounds.
//
// Arithmetic is float32 where the peer's tensors are (torch's default dtype), in the order
// torch 1.13's CPU kernels use (torch_float_order.h): the scores have many exact ties (hot ranks
// of one node get the same hint), so float rounding decides which expert a rank proposes.
// Where an earlier tie cannot be told apart the peer's torch.topk takes the first index (E >= 64)
// or the one std::nth_element leaves in front (E < 64), and every argmax/max takes the first.
// Sums below 2^24 tokens are exact in float32 as in torch. Loops that change nothing more stop
// early (a step with no proposal, an auction round in which no source gives): the result is the
// same as running them all.
//
// Deviations. The peer has no target: a request's target_imbalance_pct is ignored. It cannot
// run with K = 0 (IndexError taking the best slot over an empty axis): ours returns the empty
// plan. Resident replicas are not reused (the peer plans from scratch). On a cost matrix that is
// not a two-level tree, λ is the largest cost between nodes over the largest inside one.
#include <algorithm>
#include <cmath>
#include <span>
#include <utility>

#include "planners/builtin.h"
#include "planners/params.h"
#include "planners/torch_float_order.h"

namespace taot::planners {
namespace {

// The peer's -INF (1e9) in its masked scores.
constexpr float kMasked = -1e9f;
// The peer's EPS under every Sinkhorn division.
constexpr float kSinkhornFloor = 1e-8f;

struct PaperParams {
  int sinkhorn_iterations = 50;
  int auction_rounds = 300;
  float auction_epsilon = 1.0f;
  float hint_weight = 0.1f;
};

// λ: the inter-node cost in units of the intra-node one (the peer knows only this ratio).
double InterNodeRatio(const Topology& topo) {
  if (const auto& tree = topo.tree_costs(); tree && tree->intra > 0) return tree->inter / tree->intra;
  double intra = 0, inter = 0;
  for (int a = 0; a < topo.ranks(); ++a) {
    for (int b = 0; b < topo.ranks(); ++b) {
      if (a == b) continue;
      double& side = topo.same_node(a, b) ? intra : inter;
      side = std::max(side, topo.cost(a, b));
    }
  }
  return intra > 0 && inter > 0 ? inter / intra : kDefaultInterNodeCost;
}

// Bonus of moving toward rank `to` from rank `from`: 1 inside a node, 1/λ across, 0 on itself.
float TopologyBonus(const Topology& topo, int from, int to, float inter_bonus) {
  if (from == to) return 0.0f;
  return topo.same_node(from, to) ? 1.0f : inter_bonus;
}

// Phase 1's per-rank statistics, float32 as gen_assignment_sinkhorn has them.
struct RankExcess {
  std::vector<float> expert_load;  // count_tokens_per_expert
  float mean = 0;
  std::vector<float> excess;  // hot_excess
  std::vector<float> spare;   // spare_cap
};

RankExcess MeasureExcess(const PlanRequest& request) {
  const int R = request.ranks();
  const int E = request.experts();
  const int per_rank = request.experts_per_rank();
  RankExcess m;
  m.expert_load.resize(static_cast<size_t>(E));
  for (int e = 0; e < E; ++e) {
    int64_t total = 0;  // the int64 column sum, then one conversion, as load.sum(0).float()
    for (int s = 0; s < R; ++s) total += request.load.at(s, e);
    m.expert_load[e] = static_cast<float>(total);
  }
  std::vector<float> rank_load(static_cast<size_t>(R));
  for (int r = 0; r < R; ++r) {
    rank_load[r] = TorchSum(std::span<const float>(m.expert_load).subspan(static_cast<size_t>(r) * per_rank, per_rank));
  }
  m.mean = TorchSum(rank_load) / static_cast<float>(R);
  m.excess.resize(static_cast<size_t>(R));
  m.spare.resize(static_cast<size_t>(R));
  for (int r = 0; r < R; ++r) {
    m.excess[r] = std::max(rank_load[r] - m.mean, 0.0f);
    m.spare[r] = std::max(m.mean - rank_load[r], 0.0f);
  }
  return m;
}

// The Gibbs kernel M (R x R, row-major) of `_get_sinkhorn_statics`.
std::vector<float> GibbsKernel(const Topology& topo, double lambda) {
  const int R = topo.ranks();
  const float intra = std::exp(static_cast<float>(-1.0 / lambda));
  const float inter = std::exp(-1.0f);
  std::vector<float> kernel(static_cast<size_t>(R) * R);
  for (int a = 0; a < R; ++a) {
    for (int b = 0; b < R; ++b) kernel[static_cast<size_t>(a) * R + b] = topo.same_node(a, b) ? intra : inter;
  }
  return kernel;
}

// torch.mv(M, x) (transposed = false) or torch.mv(M.t(), x): the BLAS sgemv both reach adds the
// products in index order from zero.
std::vector<float> KernelTimes(const std::vector<float>& kernel, const std::vector<float>& x, bool transposed) {
  const size_t R = x.size();
  std::vector<float> y(R, 0.0f);
  for (size_t i = 0; i < R; ++i) {
    float sum = 0;
    for (size_t j = 0; j < R; ++j) sum = sum + (transposed ? kernel[j * R + i] : kernel[i * R + j]) * x[j];
    y[i] = sum;
  }
  return y;
}

// Phase 1: the rank-level transport plan T (R x R), each column capped to its demand.
std::vector<float> RankTransport(const std::vector<float>& kernel, const RankExcess& m, int iterations) {
  const size_t R = m.excess.size();
  const float scale = std::min(TorchSum(m.spare) / std::max(TorchSum(m.excess), 1.0f), 1.0f);
  std::vector<float> supply(R);
  for (size_t i = 0; i < R; ++i) supply[i] = m.excess[i] * scale;
  std::vector<float> u(R, 1.0f), v(R, 1.0f);
  for (int it = 0; it < iterations; ++it) {
    const std::vector<float> mv = KernelTimes(kernel, v, false);
    for (size_t i = 0; i < R; ++i) u[i] = supply[i] / std::max(mv[i], kSinkhornFloor);
    const std::vector<float> mtu = KernelTimes(kernel, u, true);
    for (size_t j = 0; j < R; ++j) v[j] = m.spare[j] / std::max(mtu[j], kSinkhornFloor);
  }
  std::vector<float> plan(R * R);
  for (size_t i = 0; i < R; ++i) {
    for (size_t j = 0; j < R; ++j) plan[i * R + j] = u[i] * kernel[i * R + j] * v[j];
  }
  const std::vector<float> columns = TorchColumnSums(plan, static_cast<int64_t>(R), static_cast<int64_t>(R));
  for (size_t j = 0; j < R; ++j) {
    const float cap = std::min(m.spare[j] / std::max(columns[j], kSinkhornFloor), 1.0f);
    for (size_t i = 0; i < R; ++i) plan[i * R + j] = plan[i * R + j] * cap;
  }
  return plan;
}

// Phase 2's spill: per rank, experts sorted by load ascending (torch.sort: std::sort on (load,
// index), so equal loads keep the order libstdc++ leaves them in); each takes the growth of the
// prefix sum's excess over the mean. torch's cumsum adds in double and rounds each prefix.
std::vector<float> ExpertSpill(const RankExcess& m, int ranks, int per_rank) {
  std::vector<float> spill(m.expert_load.size(), 0.0f);
  std::vector<std::pair<float, int>> local(static_cast<size_t>(per_rank));
  for (int r = 0; r < ranks; ++r) {
    for (int i = 0; i < per_rank; ++i) local[i] = {m.expert_load[r * per_rank + i], r * per_rank + i};
    std::sort(local.begin(), local.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    double prefix = 0;
    float previous = 0;
    for (int i = 0; i < per_rank; ++i) {
      prefix += local[i].first;
      const float excess = std::max(static_cast<float>(prefix) - m.mean, 0.0f);
      spill[local[i].second] = i == 0 ? excess : excess - previous;
      previous = excess;
    }
  }
  return spill;
}

// Round k's match of rank r: its slot r·K + k serves `expert` with `tokens` (0: empty; expert 0
// then, as the peer's argmax over an all-zero column).
struct SlotFill {
  int expert = 0;
  int64_t tokens = 0;
};

// Phase 2's state across its K rounds.
class SlotMatcher {
 public:
  SlotMatcher(const PlanRequest& request, const RankExcess& m, const std::vector<float>& transport, float inter_bonus,
              float hint_weight);
  // One round: the expert (and float amount) each rank got, -1 where none.
  void Round(std::vector<int>& expert_of_rank, std::vector<float>& amount_of_rank);

 private:
  bool Valid(int e, int r) const;
  float Score(int e, int r) const;
  // The expert rank r proposes (torch.topk over its column), or -1 when it has no valid one.
  int Propose(int r);
  // One inner step; false when no rank proposed (the remaining steps would change nothing).
  bool Step(std::vector<int>& expert_of_rank, std::vector<float>& amount_of_rank);

  const int R_, E_, per_rank_;
  std::vector<char> hot_expert_;
  std::vector<float> bonus_term_, hint_term_;  // α·bonus, 0.1·α·hint, per (home, rank)
  std::vector<float> spill_, spare_;
  std::vector<char> used_;  // (expert, rank) matched in an earlier round
  std::vector<char> matched_;
  std::vector<float> column_;
  std::vector<int> proposal_;
};

SlotMatcher::SlotMatcher(const PlanRequest& request, const RankExcess& m, const std::vector<float>& transport,
                         float inter_bonus, float hint_weight)
    : R_(request.ranks()),
      E_(request.experts()),
      per_rank_(request.experts_per_rank()),
      hot_expert_(static_cast<size_t>(E_)),
      bonus_term_(static_cast<size_t>(R_) * R_),
      hint_term_(static_cast<size_t>(R_) * R_),
      spill_(ExpertSpill(m, R_, per_rank_)),
      spare_(m.spare),
      used_(static_cast<size_t>(E_) * R_, 0),
      matched_(static_cast<size_t>(R_), 0),
      column_(static_cast<size_t>(E_)),
      proposal_(static_cast<size_t>(R_)) {
  const Topology& topo = request.topology();
  const float alpha = m.mean / static_cast<float>(std::max(per_rank_, 1));
  const float hint_alpha = alpha * hint_weight;
  for (int h = 0; h < R_; ++h) {
    const float budget = std::max(m.excess[h], 1.0f);
    for (int r = 0; r < R_; ++r) {
      const size_t i = static_cast<size_t>(h) * R_ + r;
      bonus_term_[i] = alpha * TopologyBonus(topo, h, r, inter_bonus);
      hint_term_[i] = hint_alpha * (transport[i] / budget);
    }
  }
  for (int e = 0; e < E_; ++e) hot_expert_[e] = m.excess[e / per_rank_] > 0.0f;
}

bool SlotMatcher::Valid(int e, int r) const {
  return hot_expert_[e] && e / per_rank_ != r && !used_[static_cast<size_t>(e) * R_ + r] && !matched_[r] &&
         spare_[r] > 0.0f && spill_[e] > 0.0f;
}

float SlotMatcher::Score(int e, int r) const {
  const size_t i = static_cast<size_t>(e / per_rank_) * R_ + r;
  return (std::min(spill_[e], spare_[r]) + bonus_term_[i]) + hint_term_[i];
}

int SlotMatcher::Propose(int r) {
  bool any = false;
  for (int e = 0; e < E_; ++e) {
    const bool valid = Valid(e, r);
    column_[e] = valid ? Score(e, r) : kMasked;
    any = any || valid;
  }
  return any ? static_cast<int>(TorchTopOne(column_)) : -1;
}

bool SlotMatcher::Step(std::vector<int>& expert_of_rank, std::vector<float>& amount_of_rank) {
  bool any = false;
  for (int r = 0; r < R_; ++r) {
    proposal_[r] = matched_[r] || spare_[r] <= 0.0f ? -1 : Propose(r);
    any = any || proposal_[r] >= 0;
  }
  if (!any) return false;
  // Each proposed expert's best proposer (the first on equal scores), from this step's state.
  std::vector<std::pair<int, float>> best(static_cast<size_t>(E_), {-1, 0.0f});
  for (int r = 0; r < R_; ++r) {
    const int e = proposal_[r];
    if (e < 0) continue;
    const float score = Score(e, r);
    if (best[e].first < 0 || score > best[e].second) best[e] = {r, score};
  }
  for (int e = 0; e < E_; ++e) {
    const int r = best[e].first;
    if (r < 0) continue;
    const float give = std::min(spill_[e], spare_[r]);
    expert_of_rank[r] = e;
    amount_of_rank[r] = give;
    matched_[r] = give > 0.0f;
    spill_[e] = std::max(spill_[e] - give, 0.0f);
    spare_[r] = std::max(spare_[r] - give, 0.0f);
  }
  return true;
}

void SlotMatcher::Round(std::vector<int>& expert_of_rank, std::vector<float>& amount_of_rank) {
  std::fill(expert_of_rank.begin(), expert_of_rank.end(), -1);
  std::fill(amount_of_rank.begin(), amount_of_rank.end(), 0.0f);
  std::fill(matched_.begin(), matched_.end(), 0);
  for (int step = 0; step < R_; ++step) {
    if (!Step(expert_of_rank, amount_of_rank)) break;
  }
  for (int r = 0; r < R_; ++r) {
    if (expert_of_rank[r] >= 0 && amount_of_rank[r] > 0.0f) used_[static_cast<size_t>(expert_of_rank[r]) * R_ + r] = 1;
  }
}

// Phases 1 and 2: what each slot r·K + k serves.
std::vector<SlotFill> FillSlots(const PlanRequest& request, double lambda, const PaperParams& params) {
  const int R = request.ranks();
  const int K = request.slots_per_rank();
  const RankExcess m = MeasureExcess(request);
  const std::vector<float> transport =
      RankTransport(GibbsKernel(request.topology(), lambda), m, params.sinkhorn_iterations);
  SlotMatcher matcher(request, m, transport, static_cast<float>(1.0 / lambda), params.hint_weight);
  std::vector<SlotFill> slots(static_cast<size_t>(R) * K);
  std::vector<int> expert_of_rank(static_cast<size_t>(R));
  std::vector<float> amount_of_rank(static_cast<size_t>(R));
  for (int k = 0; k < K; ++k) {
    matcher.Round(expert_of_rank, amount_of_rank);
    for (int r = 0; r < R; ++r) {
      // count_matrix.long(): truncation, so less than one token leaves the slot empty.
      const auto tokens = static_cast<int64_t>(amount_of_rank[r]);
      if (expert_of_rank[r] >= 0 && tokens > 0) slots[static_cast<size_t>(r) * K + k] = {expert_of_rank[r], tokens};
    }
  }
  return slots;
}

// Phase 3, `auction_allocation`: tokens from source ranks to slots.
//
// As in the peer, a slot that no source can serve (all masked) counts as asking rank 0, so rank 0
// may serve slot 0 in a round where slot 0 asked another rank; two sources then serve one slot,
// and rank 0 takes the excess back (its serve is min(tokens, need), and the need went negative)
// the next time nothing else asks it. Supply never goes negative, so neither does a source's
// total for an expert, and no flow ends negative.
class TokenAuction {
 public:
  TokenAuction(const PlanRequest& request, const std::vector<SlotFill>& slots, float inter_bonus);
  // One round; false when no source gave (every later round would be the same).
  bool Round(float epsilon);
  int64_t flow(int source, int slot) const { return flow_[static_cast<size_t>(source) * S_ + slot]; }

 private:
  int64_t& supply(int source, int slot) { return supply_[static_cast<size_t>(slots_[slot].expert) * R_ + source]; }
  // Step 1: each slot asks its favourite source (the first on equal values).
  void Ask();
  // Step 2: each source serves the best slot that asked it (the first on equal values; slot 0
  // when only masked ones did).
  void Serve();

  const int R_, K_, S_;
  const std::vector<SlotFill>& slots_;
  std::vector<float> bonus_;     // per (slot's rank, source)
  std::vector<int64_t> supply_;  // per (expert, source): the load, transposed
  std::vector<int64_t> need_;
  std::vector<float> price_;
  std::vector<int64_t> flow_;  // per (source, slot)
  std::vector<int> asked_, served_;
  std::vector<float> ask_value_, serve_value_;
  std::vector<char> has_request_;
  std::vector<int64_t> give_;
};

TokenAuction::TokenAuction(const PlanRequest& request, const std::vector<SlotFill>& slots, float inter_bonus)
    : R_(request.ranks()),
      K_(request.slots_per_rank()),
      S_(R_ * K_),
      slots_(slots),
      bonus_(static_cast<size_t>(R_) * R_),
      supply_(static_cast<size_t>(request.experts()) * R_),
      need_(static_cast<size_t>(S_)),
      price_(static_cast<size_t>(R_), 0.0f),
      flow_(static_cast<size_t>(R_) * S_, 0),
      asked_(static_cast<size_t>(S_)),
      served_(static_cast<size_t>(R_)),
      ask_value_(static_cast<size_t>(S_)),
      serve_value_(static_cast<size_t>(R_)),
      has_request_(static_cast<size_t>(R_)),
      give_(static_cast<size_t>(R_)) {
  for (int to = 0; to < R_; ++to) {
    for (int from = 0; from < R_; ++from) {
      bonus_[static_cast<size_t>(to) * R_ + from] = TopologyBonus(request.topology(), from, to, inter_bonus);
    }
  }
  for (int source = 0; source < R_; ++source) {
    for (int e = 0; e < request.experts(); ++e) {
      supply_[static_cast<size_t>(e) * R_ + source] = request.load.at(source, e);
    }
  }
  for (int s = 0; s < S_; ++s) need_[s] = slots[s].tokens;
}

void TokenAuction::Ask() {
  for (int s = 0; s < S_; ++s) {
    asked_[s] = 0;
    ask_value_[s] = kMasked;
    if (need_[s] <= 0) continue;
    const int64_t* supply = &supply_[static_cast<size_t>(slots_[s].expert) * R_];
    const float* bonus = &bonus_[static_cast<size_t>(s / K_) * R_];
    for (int r = 0; r < R_; ++r) {
      const float value = supply[r] > 0 ? bonus[r] - price_[r] : kMasked;
      if (r == 0 || value > ask_value_[s]) {
        asked_[s] = r;
        ask_value_[s] = value;
      }
    }
  }
}

void TokenAuction::Serve() {
  std::fill(has_request_.begin(), has_request_.end(), 0);
  for (int r = 0; r < R_; ++r) {
    served_[r] = 0;
    serve_value_[r] = asked_[0] == r ? ask_value_[0] : kMasked;
  }
  for (int s = 0; s < S_; ++s) {
    const int r = asked_[s];
    has_request_[r] = 1;
    if (ask_value_[s] > serve_value_[r]) {
      served_[r] = s;
      serve_value_[r] = ask_value_[s];
    }
  }
}

bool TokenAuction::Round(float epsilon) {
  Ask();
  Serve();
  // Steps 3 and 4: every serve from the state before any of them.
  bool any = false;
  for (int r = 0; r < R_; ++r) {
    give_[r] = has_request_[r] ? std::min(supply(r, served_[r]), need_[served_[r]]) : 0;
    any = any || give_[r] != 0;
  }
  for (int r = 0; r < R_; ++r) {
    const int s = served_[r];
    flow_[static_cast<size_t>(r) * S_ + s] += give_[r];
    supply(r, s) -= give_[r];
    need_[s] -= give_[r];
    // Step 5: a source that gave gets dearer, for every expert alike.
    if (give_[r] > 0) price_[r] = price_[r] + epsilon;
  }
  return any;
}

class TaotPaperPlanner final : public Planner {
 public:
  explicit TaotPaperPlanner(PaperParams params) : params_(params) {}
  std::string_view name() const override { return "taot-paper"; }
  absl::StatusOr<Plan> MakePlan(const PlanRequest& request) override;

 private:
  PaperParams params_;
};

absl::StatusOr<Plan> TaotPaperPlanner::MakePlan(const PlanRequest& request) {
  Plan plan;
  const int K = request.slots_per_rank();
  if (K == 0) return plan;  // the peer's code raises IndexError here
  const double lambda = InterNodeRatio(request.topology());
  const std::vector<SlotFill> slots = FillSlots(request, lambda, params_);
  TokenAuction auction(request, slots, static_cast<float>(1.0 / lambda));
  for (int round = 0; round < params_.auction_rounds; ++round) {
    if (!auction.Round(params_.auction_epsilon)) break;
  }
  const int R = request.ranks();
  const int S = R * K;
  for (int s = 0; s < S; ++s) {
    if (slots[s].tokens > 0) plan.replicas.push_back({slots[s].expert, s / K});
  }
  for (int r = 0; r < R; ++r) {
    for (int s = 0; s < S; ++s) {
      if (auction.flow(r, s) > 0) plan.assignments.push_back({r, slots[s].expert, s / K, auction.flow(r, s)});
    }
  }
  return plan;
}

}  // namespace

PlannerOr MakeTaotPaper(const PlannerParams& params) {
  ParamReader reader("taot-paper", params);
  PaperParams p;
  p.sinkhorn_iterations = static_cast<int>(reader.Int("sinkhorn_iterations", 50, 1, 100000));
  p.auction_rounds = static_cast<int>(reader.Int("auction_rounds", 300, 1, 100000));
  p.auction_epsilon = static_cast<float>(reader.Double("auction_epsilon", 1.0, 1e-9, 1e9));
  p.hint_weight = static_cast<float>(reader.Double("hint_weight", 0.1, 0.0, 1e9));
  if (absl::Status s = reader.Finish(); !s.ok()) return s;
  return std::make_unique<TaotPaperPlanner>(p);
}

}  // namespace taot::planners
