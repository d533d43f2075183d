#include "planners/taot_placement.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <tuple>
#include <utility>

#include "planners/greedy_covers.h"
#include "planners/node_floors.h"
#include "taot/planner/solvers/min_cost_transport.h"
#include "taot/planner/solvers/tree_transport.h"

namespace taot::planners {

void Placement::Prepare(const PlanRequest& request, const LoadSums& sums) {
  state_.Bind(request, sums);
  // Lists of ranks, sized once (a first plan would grow them by doubling).
  for (std::vector<int>* ranks : {&demand_ranks_, &hot_, &by_expert_}) {
    ranks->reserve(static_cast<size_t>(request.ranks()));
  }
  two_piece_.Prepare(state_);
  split_.Resize(request.ranks(), request.experts());
}

const std::vector<int>& Placement::NodeOrder() {
  const Topology& topo = state_.topology();
  const int R = state_.ranks();
  exports_.assign(static_cast<size_t>(topo.nodes()), 0);
  carriers_chosen_.assign(static_cast<size_t>(topo.nodes()), -1);
  carriers_handing_.assign(static_cast<size_t>(topo.nodes()), 0);
  if (state_.tree()) {
    const std::span<const int64_t> surpluses = state_.surpluses(), spares = state_.spares();
    supply_.assign(surpluses.begin(), surpluses.end());
    demand_.assign(spares.begin(), spares.end());
    demand_ranks_.clear();
    for (int n = 0; n < topo.nodes(); ++n) {
      for (int r : topo.ranks_of_node(n)) {
        if (demand_[r] > 0) demand_ranks_.push_back(r);
      }
    }
    MatchOnTree(topo, supply_, demand_, demand_ranks_, [&](int from, int to, int64_t amount) {
      if (!topo.same_node(from, to)) exports_[topo.node_of(from)] += amount;
    });
  } else {
    std::vector<int> hot, cold;
    for (int r = 0; r < R; ++r) {
      if (state_.surplus(r) > 0) hot.push_back(r);
      if (state_.spare(r) > 0) cold.push_back(r);
    }
    std::vector<int64_t> supply, demand;
    std::vector<double> cost;
    for (int h : hot) supply.push_back(state_.surplus(h));
    for (int c : cold) demand.push_back(state_.spare(c));
    for (int h : hot) {
      for (int c : cold) cost.push_back(topo.cost(h, c));
    }
    for (const TransportFlow& f : SolveMinCostTransport(supply, demand, cost).flows) {
      if (!topo.same_node(hot[f.from], cold[f.to])) exports_[topo.node_of(hot[f.from])] += f.amount;
    }
  }
  std::vector<int>& order = node_order_;
  order.resize(static_cast<size_t>(topo.nodes()));
  std::iota(order.begin(), order.end(), 0);
  // Self-sufficient nodes first (they only use their own room), then exporters, largest first;
  // the lower node among equals. (std::sort with the index as the last key orders as a stable
  // sort does, without the stable sort's buffer.)
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    return std::make_tuple(exports_[a] > 0, -exports_[a], a) < std::make_tuple(exports_[b] > 0, -exports_[b], b);
  });
  return order;
}

bool Placement::LosesTrial(double cost, double debt) {
  if (cost >= bound_.cost || cost + debt >= bound_.cost_and_debt) trial_lost_ = true;
  return trial_lost_;
}

bool Placement::LosesCarry(const Handoff& carry, int h) {
  // The carry's piece adds to the cost; its sheds are made (with pieces) or owed as debt.
  const double piece = state_.PieceCost(h, carry.expert, carry.receiver);
  return LosesTrial(state_.cost() + piece, state_.debt() + carry.cost - piece);
}

void Placement::BestCover(int h) {
  PlacementState& s = state_;
  GrowPieces(s, h, Scope::kAnywhere);
  if (s.surplus(h) == 0) return;
  const std::optional<TwoPieceCover::Option> two = two_piece_.Find(s, h);
  // The two-piece cover is exact over covers of one or two pieces (over the bins that matter),
  // and a split of three or more pieces costs at least three intra-node pieces, so the split
  // cannot win once the two pieces cost no more than that (ties went to the split before;
  // measured over the frontier cases, taking the two pieces loses nothing and saves the
  // split's trials).
  if (!two || !s.tree() || two->cost - s.cost() > 3 * s.tree_costs().intra) {
    const SplitCover::Split split = split_.Plan(s, h, two ? two->cost : std::numeric_limits<double>::infinity(),
                                                std::min(bound_.cost, bound_.cost_and_debt - s.debt()));
    // A handoff costs an inter-node piece and at least one shed. Nor can it beat a split that
    // costs no more than that (the piece free where a resident replica takes it).
    const double inter = s.tree_costs().inter, intra = s.tree_costs().intra;
    const double handoff_floor = s.cost() + (s.HasResident(h) ? 0.0 : inter) + intra;
    const bool handoff_can_win = !s.tree() || ((!two || two->cost - s.cost() > inter + intra) &&
                                               std::make_tuple(int64_t{0}, handoff_floor) < split.key);
    const std::optional<Handoff> handoff =
        handoff_can_win ? chains_.PlanHandoff(s, h, sheds_, &carry_cache_) : std::nullopt;
    if (handoff_can_win && shared_.recording && HandoffDependsOnSheds(h, handoff)) shared_.recording = false;
    const auto two_key = two ? std::make_tuple(int64_t{0}, two->cost) : std::make_tuple(s.surplus(h) + 1, 0.0);
    const auto handoff_key =
        handoff ? std::make_tuple(int64_t{0}, s.cost() + handoff->cost) : std::make_tuple(s.surplus(h) + 1, 0.0);
    if (handoff && handoff_key < two_key && handoff_key < split.key) {
      const double piece = s.PieceCost(h, handoff->expert, handoff->receiver);
      if (!LosesTrial(s.cost() + piece, s.debt() + handoff->cost - piece)) ChainCovers::ApplyHandoff(s, h, *handoff);
      return;
    }
    if (!two || !(two_key < split.key)) {
      // A split that leaves some over is kept here, where a pass with a bound may have ruled out
      // another (SplitCover::kUseless) and lost.
      if (std::get<0>(split.key) > 0 && shared_.recording) shared_.split_left_over = true;
      if (!LosesTrial(std::get<1>(split.key), s.debt())) split_.Apply(s, h);
      return;
    }
  }
  // The two pieces: outright, or the cheapest of the three.
  if (!LosesTrial(two->cost, s.debt())) TwoPieceCover::Apply(s, h, *two);
}

bool Placement::SharedNodesUnderBound(double bound) const {
  if (bound == std::numeric_limits<double>::infinity()) return true;
  if (shared_.split_left_over) return false;
  // With a margin for sums made in another order: a shared node near the bound is covered again.
  const double margin = 1e-9 * (1 + std::abs(bound));
  for (size_t i = 0; i < shared_.nodes; ++i) {
    if (shared_.costs[i] + floor_rest_[i] + margin >= bound) return false;
  }
  return true;
}

bool Placement::HandoffDependsOnSheds(int h, const std::optional<Handoff>& handoff) {
  using Sheds = ChainCovers::Sheds;
  const std::optional<Handoff> other =
      chains_.PlanHandoff(state_, h, sheds_ == Sheds::kWhole ? Sheds::kPieces : Sheds::kWhole, &carry_cache_);
  if (!handoff || !other) return handoff.has_value() != other.has_value();
  return std::tie(handoff->expert, handoff->receiver, handoff->tokens, handoff->overflow, handoff->cost) !=
         std::tie(other->expert, other->receiver, other->tokens, other->overflow, other->cost);
}

bool Placement::ExcessNeedsTwoCrossings(int node) const {
  // With no bin elsewhere (-1), any excess.
  return state_.NodeExcess(node) > std::max<int64_t>(state_.RoomiestElsewhere(node), 0);
}

void Placement::CarryPieces(int node, std::span<const int> carriers) {
  PlacementState& s = state_;
  const int64_t excess = s.NodeExcess(node);
  if (excess <= 0 || carriers.empty()) return;
  // A receiver filled to the cap sheds all its experts and leaves its mates' slots fragmented
  // for the next: the receivers the node needs share its export evenly, one per carrier in turn.
  int64_t share = excess;
  const int first = carriers[0];
  const Handoff* probe = chains_.PlanCarry(s, first, s.LargestExpert(first), sheds_, excess, &carry_cache_);
  if (probe) {
    const int64_t receivers = (excess + probe->tokens - 1) / probe->tokens;
    share = (excess + receivers - 1) / receivers;
  }
  // Where one receiver takes the whole excess, the first carry is the probe's: the same carrier,
  // expert, amount and state (50 of the 281 carries weighed on the simulator's 40 requests).
  bool probe_is_first = share == excess;
  for (bool carried = true; carried && s.NodeExcess(node) > 0;) {
    carried = false;
    for (const int h : carriers) {
      const bool reuse_probe = std::exchange(probe_is_first, false);
      const int e = s.LargestExpert(h);
      if (e < 0 || s.NodeExcess(node) <= 0) continue;
      const Handoff* carry =
          reuse_probe ? probe : chains_.PlanCarry(s, h, e, sheds_, std::min(share, s.NodeExcess(node)), &carry_cache_);
      if (!carry) continue;
      if (LosesCarry(*carry, h)) return;
      ChainCovers::ApplyCarry(s, h, *carry);
      carried = true;
    }
  }
}

void Placement::CoverHot() {
  for (int h : hot_) PlaceWhole(state_, h);
  for (int h : hot_) {
    if (LosesTrial(state_.cost(), state_.debt())) return;
    if (state_.surplus(h) > 0) BestCover(h);
  }
}

void Placement::CoverNode(int node) {
  PlacementState& s = state_;
  const Topology& topo = s.topology();
  s.DeferNode(node);
  s.ClearDebt();
  s.ClearLog();
  hot_.clear();
  for (int r : topo.ranks_of_node(node)) {
    if (s.surplus(r) > 0) hot_.push_back(r);
  }
  // The biggest surplus first, the lower rank among equals.
  std::sort(hot_.begin(), hot_.end(),
            [&](int a, int b) { return std::make_pair(-s.surplus(a), a) < std::make_pair(-s.surplus(b), b); });
  auto end_node = [&] {
    bound_ = {};
    s.set_logging(false);
    s.EndDeferral();
  };
  int carriers_max = exports_[node] > 0 ? std::min<int>(kMaxCarriers, static_cast<int>(hot_.size())) : 0;
  // The pass's bound holds inside every trial: a trial that reaches it either loses to one
  // below it or, kept, loses the pass (node_lost_).
  bound_ = {pass_bound_, std::numeric_limits<double>::infinity()};
  trial_lost_ = false;
  if (carriers_max == 0) {
    CoverHot();
    node_lost_ = trial_lost_;
  } else {
    // A node that must export: also try letting its hot ranks with the biggest experts carry
    // whole experts across nodes (one inter-node piece each, bigger than their own surplus),
    // so that node-mates cover themselves inside the node in the room that leaves.
    std::vector<int>& by_expert = by_expert_;
    by_expert = hot_;
    // The biggest expert first; among equals, hot_'s order.
    std::sort(by_expert.begin(), by_expert.end(), [&](int a, int b) {
      return std::make_tuple(-s.left(s.LargestExpert(a)), -s.surplus(a), a) <
             std::make_tuple(-s.left(s.LargestExpert(b)), -s.surplus(b), b);
    });
    constexpr int64_t kLost = std::numeric_limits<int64_t>::max();  // a lost trial's surplus
    const size_t start = s.log().size();
    const bool can_hand_off = ChainCovers::CanHandOff(s, by_expert[0]);
    // A carrier either fills the best-fitting bin in another node, or (`handing`) hands its
    // expert to a receiver that sheds its own experts to its node-mates: one inter-node piece
    // then carries what several would.
    auto try_carriers = [&](int carriers, bool handing) {
      // A reused choice may name more carriers than this order leaves hot ranks.
      carriers = std::min(carriers, static_cast<int>(by_expert.size()));
      trial_lost_ = false;
      if (handing && sheds_ == ChainCovers::Sheds::kPieces) {
        CarryPieces(node, std::span<const int>(by_expert).first(static_cast<size_t>(carriers)));
      } else {
        for (int i = 0; i < carriers; ++i) {
          const int h = by_expert[i];
          const int e = s.LargestExpert(h);
          if (e < 0) continue;
          if (handing) {
            if (const Handoff* carry =
                    chains_.PlanCarry(s, h, e, sheds_, std::numeric_limits<int64_t>::max(), &carry_cache_)) {
              if (LosesCarry(*carry, h)) break;
              ChainCovers::ApplyCarry(s, h, *carry);
              continue;
            }
          }
          const int c = s.BestFitBin(h, e, s.left(e), Scope::kOtherNodes);
          if (c >= 0) {
            Export(s, h, e, c, std::min(s.left(e), s.spare(c)));
          }
        }
      }
      if (!trial_lost_) CoverHot();
      // A lost trial loses to every other, and kept (every trial lost), it loses the pass.
      if (trial_lost_) return std::make_tuple(kLost, s.cost() + s.debt());
      int64_t unmet = 0;
      for (int r : topo.ranks_of_node(node)) unmet += s.surplus(r);
      return std::make_tuple(unmet, s.cost() + s.debt());
    };
    // A trial also stops once it reaches the best trial's cost where that leaves nothing over:
    // it can beat the best only with less left over.
    const auto bound_by_best = [&](const std::tuple<int64_t, double>& best) {
      bound_ = {pass_bound_, std::get<0>(best) == 0 ? std::get<1>(best) : std::numeric_limits<double>::infinity()};
    };
    // With pieces, the handoff of all the carriers is kept on what it leaves over alone, whatever
    // it costs. A node that can hand off (its biggest expert more than three times any bin
    // elsewhere: ChainCovers::CanHandOff) and whose excess is more than any one bin elsewhere
    // takes tries it first: where it leaves nothing over it is the node's cover, and the cover
    // without carriers is not made. That cover decides whether carriers are tried at all (where
    // it crosses nodes twice or more), and with such an excess it does, unless a handoff of its
    // own crosses once: only there does the order change what is tried. Elsewhere the first
    // handoff is undone and weighed against that cover below. (Measured against the cover
    // without carriers first: 10 of 1,296 plans moved, no family's mean cost by 0.2%, none of
    // the simulator's 40 EP128 requests, and 10-16% fewer instructions on the bursts of 1, 3 and
    // R/8 experts; without the excess's test, 3 of those 40 requests cost 3-6% more;
    // docs/performance.md.)
    const bool first = handoff_first_ != HandoffFirst::kOff && sheds_ == ChainCovers::Sheds::kPieces &&
                       carriers_chosen_[node] < 0 && can_hand_off && ExcessNeedsTwoCrossings(node);
    int64_t handoff_left = 0;  // what that first handoff left over
    if (first) {
      s.set_logging(true);
      bound_ = {};
      handoff_left = std::get<0>(try_carriers(carriers_max, true));
      ++first_handoffs_.made;
      if (handoff_left == 0 && handoff_first_ == HandoffFirst::kOn) {
        ++first_handoffs_.covered;
        carriers_chosen_[node] = carriers_max;
        carriers_handing_[node] = true;
        node_lost_ = false;
        end_node();
        return;
      }
      s.Rollback(start, nullptr);
      bound_ = {pass_bound_, std::numeric_limits<double>::infinity()};
    }
    bool reused_lost = false;
    if (carriers_chosen_[node] >= 0) {
      // The first node order chose already; the second reuses the choice (measured: no loss).
      reused_lost = std::get<0>(try_carriers(carriers_chosen_[node], carriers_handing_[node])) == kLost;
      carriers_max = 0;
    }
    s.set_logging(carriers_max > 0);
    std::tuple<int64_t, double> best_key = carriers_max > 0 ? try_carriers(0, false) : std::make_tuple(int64_t{0}, 0.0);
    carriers_chosen_[node] = 0;
    carriers_handing_[node] = false;
    // Carriers only pay by merging cross-node pieces: with fewer than two there is nothing to merge.
    int cross = 0;
    for (size_t i = start; i < s.log().size(); ++i) {
      const PlacementState::Change& u = s.log()[i];
      cross += u.kind == PlacementState::Change::kAdd && !topo.same_node(u.rank, u.bin);
    }
    // A lost first trial stopped before its count was known: the carriers may still save the pass.
    if (std::get<0>(best_key) == kLost) cross = std::max(cross, 2);
    trials_.Begin(s, start);
    // With pieces, the handoff is kept where it leaves nothing over, or no more than the cover
    // without carriers; the plain trials run only where it leaves more. (Measured against the
    // plain trials first and then the handoff of as many carriers as they chose: as cheap or
    // cheaper on all the families but one, +0.6%, and 3% cheaper and 4-9% faster on the EP256
    // bursts of R/8 experts; docs/performance.md.) One made first, undone, is made again only
    // where it is kept (it rarely leaves some over).
    const bool hand_off = cross >= 2 && can_hand_off;
    const int64_t left_without = std::get<0>(best_key);
    auto kept = [&](int64_t left) { return left == 0 || (left_without != kLost && left <= left_without); };
    bool handed_off = false;
    if (hand_off && sheds_ == ChainCovers::Sheds::kPieces && carriers_max > 0 && (!first || kept(handoff_left))) {
      trials_.Next();
      bound_ = {};
      const std::tuple<int64_t, double> key = try_carriers(carriers_max, true);
      handed_off = kept(std::get<0>(key));
      trials_.End(handed_off);
      if (handed_off) {
        carriers_chosen_[node] = carriers_max;
        carriers_handing_[node] = true;
        best_key = key;
      }
    }
    for (int carriers = 1; carriers <= (cross >= 2 && !handed_off ? carriers_max : 0); ++carriers) {
      trials_.Next();
      bound_by_best(best_key);
      const std::tuple<int64_t, double> key = try_carriers(carriers, false);
      // One more carrier rarely helps once one did not: go back to the better cover.
      const bool better = key < best_key;
      trials_.End(better);
      if (!better) break;
      best_key = key;
      carriers_chosen_[node] = carriers;
    }
    // With whole sheds, the same carriers handing off, in one trial: as many as the plain trials
    // chose, or all the node's hot ranks if none.
    if (hand_off && sheds_ == ChainCovers::Sheds::kWhole && carriers_max > 0) {
      handoff_tried_ = true;
      const int carriers = carriers_chosen_[node] > 0 ? carriers_chosen_[node] : carriers_max;
      trials_.Next();
      bound_by_best(best_key);
      const std::tuple<int64_t, double> key = try_carriers(carriers, true);
      trials_.End(key < best_key);
      if (key < best_key) {
        carriers_chosen_[node] = carriers;
        carriers_handing_[node] = true;
        best_key = key;
      }
    }
    node_lost_ = reused_lost || std::get<0>(best_key) == kLost;
  }
  end_node();
}

std::optional<std::tuple<int64_t, double>> Placement::CoverAll(const std::vector<int>& order, const Pass& pass,
                                                               double bound) {
  PlacementState& s = state_;
  sheds_ = pass.sheds;
  std::vector<int>& nodes = pass_nodes_;
  if (pass.exporters_first) {
    // A stable partition, exporters first, without std::stable_partition's buffer.
    nodes.clear();
    for (const bool exporters : {true, false}) {
      for (int n : order) {
        if ((exports_[n] > 0) == exporters) nodes.push_back(n);
      }
    }
  } else {
    nodes = order;
  }
  // Between nodes a pass only adds pieces (CoverNode's trials are undone inside it), so its cost
  // never falls, and the nodes still to cover add at least their floors (node_floors.h): once its
  // cost and their floors (`rest`) reach the bound, the pass cannot end under it; nor can a node's
  // trial that reaches the bound less them (CoverNode's pass_bound_).
  double rest = 0;
  const auto lost = [&] { return s.cost() + rest >= bound; };
  pass_bound_ = bound;
  if (pass.sequence) {
    sequence_.Cover(s, nodes, *pass.sequence);
    if (lost()) return std::nullopt;
  } else {
    // A pass starts from the state after step 1, where the floors are taken once a bound needs them.
    if (bound < std::numeric_limits<double>::infinity() && !floors_set_) {
      NodeFloors(s, node_floor_);
      floors_set_ = true;
    }
    // Summed from the last node back, so that each node's rest is a sum, not a difference.
    floor_rest_.resize(nodes.size());
    for (size_t i = nodes.size(); i-- > 0;) {
      floor_rest_[i] = rest;
      if (floors_set_) rest += node_floor_[nodes[i]];
    }
    size_t first = 0;
    const bool transport_order = !pass.exporters_first;
    if (transport_order && shared_.nodes > 0 && SharedNodesUnderBound(bound)) {
      s.Restore(shared_.state);
      first = shared_.nodes;
    }
    // Only a pass without a bound records: its covers of the shared nodes are what a pass with
    // one makes wherever that bound leaves them under it (SharedNodesUnderBound).
    if (transport_order && shared_.record && bound == std::numeric_limits<double>::infinity()) {
      shared_.record = false;
      shared_.recording = true;
      shared_.split_left_over = false;
      shared_.costs.clear();
    }
    for (size_t i = first; i < nodes.size(); ++i) {
      if (shared_.recording && exports_[nodes[i]] > 0) {
        shared_.recording = false;
        shared_.nodes = i;
        shared_.state = s.values();
      }
      rest = floor_rest_[i];
      pass_bound_ = bound - rest;
      CoverNode(nodes[i]);
      if (shared_.recording) shared_.costs.push_back(s.cost());
      if (node_lost_ || lost()) {
        shared_.recording = false;
        return std::nullopt;
      }
    }
    shared_.recording = false;
    rest = 0;
    pass_bound_ = bound;
  }
  // Handoffs leave receivers over the cap in nodes that may already be done: their turn again.
  for (int node : nodes) {
    std::span<const int> ranks = s.topology().ranks_of_node(node);
    if (std::any_of(ranks.begin(), ranks.end(), [&](int r) { return s.surplus(r) > 0; })) {
      CoverNode(node);
      if (node_lost_ || lost()) return std::nullopt;
    }
  }
  for (int h = 0; h < s.ranks(); ++h) {
    if (s.surplus(h) > 0) CoverRank(s, h, Scope::kAnywhere);
  }
  const std::span<const int64_t> surpluses = s.surpluses();
  if (std::any_of(surpluses.begin(), surpluses.end(), [](int64_t x) { return x > 0; })) {
    AbsorbCrumbs(s);
    for (int h = 0; h < s.ranks(); ++h) {
      if (s.surplus(h) > 0) CoverRank(s, h, Scope::kAnywhere);
    }
  }
  return std::make_tuple(std::accumulate(surpluses.begin(), surpluses.end(), int64_t{0}), s.cost());
}

bool Placement::SelfSufficientNodeIsHot() const {
  const Topology& topo = state_.topology();
  for (int n = 0; n < topo.nodes(); ++n) {
    if (exports_[n] > 0) continue;
    for (int r : topo.ranks_of_node(n)) {
      if (state_.surplus(r) > 0) return true;
    }
  }
  return false;
}

bool Placement::CrossesTwiceBetweenTwoNodes(const std::vector<Piece>& pieces) {
  const Topology& topo = state_.topology();
  crossings_.clear();
  for (const Piece& p : pieces) {
    const int from = topo.node_of(state_.home_of(p.expert)), to = topo.node_of(p.rank);
    if (from != to) crossings_.push_back(from * topo.nodes() + to);
  }
  std::sort(crossings_.begin(), crossings_.end());
  return std::adjacent_find(crossings_.begin(), crossings_.end()) != crossings_.end();
}

bool Placement::Place(int64_t cap, std::vector<Piece>& pieces, bool first_met) {
  PlacementState& s = state_;
  s.ResetDeferred(cap);
  UseResident(s);
  s.EndDeferral();
  shared_.record = false;
  shared_.nodes = 0;
  first_handoffs_ = {};
  const std::vector<int>& order = NodeOrder();
  floors_set_ = false;
  const auto exporters = std::count_if(exports_.begin(), exports_.end(), [](int64_t x) { return x > 0; });
  const bool any_exporter = exporters > 0;
  const bool few_exporters = 2 * exporters < s.topology().nodes();
  bool have_best = false;
  std::tuple<int64_t, double> best_key;
  base_ = s.values();
  const bool self_sufficient_hot = SelfSufficientNodeIsHot();
  // A pass with `abortable` set stops once it cannot beat the best plan that meets the cap. The
  // exporters-first pass is not abortable where sequences follow it: it leaves every exporting
  // node's carriers at none, which the sequences' second covers reuse.
  auto run = [&](const Pass& pass, bool abortable) {
    if (have_best && first_met && std::get<0>(best_key) == 0) return;
    if (have_best) s.Restore(base_);
    const bool bounded = abortable && have_best && std::get<0>(best_key) == 0;
    const std::optional<std::tuple<int64_t, double>> key =
        CoverAll(order, pass, bounded ? std::get<1>(best_key) : std::numeric_limits<double>::infinity());
    if (!key) return;
    if (!have_best || *key < best_key) {
      best_key = *key;
      pieces = s.pieces();
      have_best = true;
    }
  };
  // With (almost) no slack every bin must be filled to the brim, where best fit fragments them
  // and the northwest-corner rule does not: the sequences try that, in a few orders.
  int64_t room = 0, surplus = 0, most_room = 0, most_surplus = 0;
  for (int r = 0; r < s.ranks(); ++r) {
    room += s.spare(r);
    surplus += s.surplus(r);
    most_room = std::max(most_room, s.spare(r));
    most_surplus = std::max(most_surplus, s.surplus(r));
  }
  const bool tight = (room - surplus) * 100 <= s.total_load();
  handoff_tried_ = false;
  // A burst: a rank's surplus over twice the roomiest bin, so its expert needs several pieces
  // wherever it goes. There the pieces pass (below) wins by far, so it goes first, and the other
  // passes then stop inside the first trial that reaches its cost (docs/performance.md, "The
  // pieces pass first on bursts, and bounds inside a node's trials").
  const bool burst = most_surplus > 2 * most_room;
  bool pieces_run = false;
  if (burst && any_exporter) {
    // The whole-sheds pass that follows starts after the nodes they share (recorded where one
    // follows whatever this pass finds: below, a pass that meets the cap may be the plan).
    shared_.record = share_start_ && (self_sufficient_hot || !few_exporters);
    run({false, ChainCovers::Sheds::kPieces, std::nullopt}, true);
    carriers_chosen_.assign(carriers_chosen_.size(), -1);
    pieces_run = true;
    // Where every hot rank's node exports and fewer than half the nodes do, the pieces pass
    // that meets the cap is the plan: the passes after it never won there (measured over the
    // workload families and the frontier cases, docs/performance.md), and they cost a burst up
    // to a quarter of its plan before their bound stops them.
    if (std::get<0>(best_key) == 0 && !self_sufficient_hot && few_exporters) return true;
  }
  // The transport's node order, then exporters first (reusing the first pass's carriers). With
  // no hot rank in a self-sufficient node the two orders cover the same nodes in the same order,
  // but for where receivers that handoffs leave over the cap take their turn; measured, the
  // second then never won (docs/performance.md), so it runs only where a self-sufficient node is
  // hot, or where the sequences reuse the carriers it leaves. After a burst's pieces pass with
  // fewer than half the nodes exporting it is skipped too: measured, it won 2 of 1,296 plans
  // there, by 1-2 (docs/performance.md), and cost an R/8-hot burst an eighth of its plan.
  run({false, ChainCovers::Sheds::kWhole, std::nullopt}, true);
  const bool second_order = self_sufficient_hot && !(pieces_run && few_exporters);
  if (any_exporter && (tight || second_order)) run({true, ChainCovers::Sheds::kWhole, std::nullopt}, !tight);
  if (tight) {
    using Order = SequenceCover::Order;
    constexpr Order kSequences[] = {
        {Order::kBiggestSurplusLast, true, true},  {Order::kBiggestExpertLast, true, true},
        {Order::kRankOrder, true, true},           {Order::kBiggestExpertLast, false, true},
        {Order::kBiggestSurplusLast, true, false}, {Order::kBiggestExpertLast, true, false},
        {Order::kRankOrder, true, false},          {Order::kBiggestExpertLast, false, false}};
    for (const Order& sequence : kSequences) run({false, ChainCovers::Sheds::kWhole, sequence}, true);
  }
  // A carriers' handoff is chosen on an optimistic estimate (Sheds::kWhole): where one was
  // weighed, and the best plan sends two pieces or more from one node to another (which one
  // carry per node could merge), the full plan with every carrier handing off pieces decides
  // too, last, so that it is kept only where it is cheaper (measured on the peer_match cases: a
  // pass without handoffs, or a second node order, adds nothing).
  if (!pieces_run && handoff_tried_ && CrossesTwiceBetweenTwoNodes(pieces)) {
    carriers_chosen_.assign(carriers_chosen_.size(), -1);
    run({false, ChainCovers::Sheds::kPieces, std::nullopt}, true);
  }
  return std::get<0>(best_key) == 0;
}

}  // namespace taot::planners
