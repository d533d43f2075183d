// Helpers shared by the tests of the expert level of `taot` (placement_*_test.cc and the cover
// tests): a placement state bound to a request it owns, an exact comparison of two states,
// random cases on a two-level and on a general topology, and random changes to a state.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <sstream>
#include <tuple>
#include <utility>
#include <vector>

#include "planners/placement_state.h"
#include "planners/plan_building.h"
#include "taot/planner/load_stats.h"
#include "taot/planner/topology.h"
#include "test_requests.h"

namespace taot::planners::testing {

// A PlacementState with the request and sums it binds to (which must outlive it).
struct BoundState {
  BoundState(PlanRequest r, int64_t cap) : request(std::move(r)), sums(SumLoads(request)) {
    state.Bind(request, sums);
    state.Reset(cap);
  }
  BoundState(const BoundState&) = delete;
  BoundState& operator=(const BoundState&) = delete;

  PlanRequest request;
  LoadSums sums;
  PlacementState state;
};

// The open bins by (room, rank), computed afresh: what the state's index (open_bins) must hold
// outside a deferred node.
inline std::vector<Bin> OpenBins(const PlacementState& s) {
  std::vector<Bin> bins;
  for (int c = 0; c < s.ranks(); ++c) {
    if (s.IsOpen(c)) bins.push_back({s.spare(c), c});
  }
  std::sort(bins.begin(), bins.end());
  return bins;
}

// One source row: rank r's load is the sum of its experts' entries.
inline PlanRequest OneRow(int ranks, int experts, int slots, const std::vector<int64_t>& row, int ranks_per_node,
                          double lambda = 3.0) {
  return taot::testing::MakeRequest(ranks, experts, slots, {row}, ranks_per_node, lambda);
}

// `request` on a general cost matrix (no tree costs): node of rank r is r / ranks_per_node,
// costs drawn from [1, 9) inside a node and [3, 12) across, deterministic in `seed`.
inline PlanRequest OnRandomMatrix(PlanRequest request, int ranks_per_node, uint64_t seed) {
  const int R = request.ranks();
  std::mt19937_64 rng(seed);
  std::vector<int> node_of(static_cast<size_t>(R));
  for (int r = 0; r < R; ++r) node_of[r] = r / ranks_per_node;
  std::vector<double> cost(static_cast<size_t>(R) * R, 0.0);
  for (int a = 0; a < R; ++a) {
    for (int b = 0; b < R; ++b) {
      if (a == b) continue;
      const double base = node_of[a] == node_of[b] ? 1.0 : 3.0;
      cost[static_cast<size_t>(a) * R + b] = base + static_cast<double>(rng() % 64) / 8.0;
    }
  }
  request =
      taot::testing::Reshaped(request, [&](Problem& p) { p.topology = Topology::FromMatrix(node_of, cost).value(); });
  return request;
}

// A random skewed case at a cap a little over the mean load, on a two-level topology or (odd
// seeds) a general matrix.
inline std::unique_ptr<BoundState> RandomState(uint64_t seed, int ranks = 8, int experts = 32, int slots = 2,
                                               int ranks_per_node = 4) {
  PlanRequest r = taot::testing::RandomRequest(ranks, experts, slots, seed, ranks_per_node);
  if (seed % 2 == 1) r = OnRandomMatrix(std::move(r), ranks_per_node, seed);
  const LoadSums sums = SumLoads(r);
  const int64_t cap = LoadCap(sums.total, ranks, 2.0 + static_cast<double>(seed % 5) * 5.0);
  return std::make_unique<BoundState>(std::move(r), cap);
}

// One random change that keeps the state well formed (a piece needs a free slot and an expert
// the bin does not hold yet); sometimes nothing.
inline void RandomChange(PlacementState& s, std::mt19937_64& rng) {
  const int R = s.ranks(), E = R * s.experts_per_rank();
  switch (rng() % 4) {
    case 0:
      for (int tries = 0; tries < 20; ++tries) {
        const int e = static_cast<int>(rng() % E), c = static_cast<int>(rng() % R), h = s.home_of(e);
        if (c == h || s.slots(c) == 0 || s.Holds(e, c) || s.left(e) == 0) continue;
        s.AddPiece(h, e, c, 1 + static_cast<int64_t>(rng() % s.left(e)));
        return;
      }
      return;
    case 1: {
      if (s.pieces().empty()) return;
      const int i = static_cast<int>(rng() % s.pieces().size());
      const int e = s.pieces()[i].expert;
      if (s.left(e) > 0) s.GrowPiece(s.home_of(e), i, 1 + static_cast<int64_t>(rng() % s.left(e)));
      return;
    }
    case 2:
      s.SetRoom(static_cast<int>(rng() % R), static_cast<int64_t>(rng() % 60) - 20, static_cast<int64_t>(rng() % 60));
      return;
    default:
      s.AddDebt(static_cast<double>(rng() % 7) / 4.0);
      return;
  }
}

// Whether two states are the same as far as any query can tell: every value, the pieces and
// their lists, the experts each rank holds (its first K - slots entries), the sorted index.
inline ::testing::AssertionResult SameState(const PlacementState& a, const PlacementState& b) {
  const PlacementState::Values& x = a.values();
  const PlacementState::Values& y = b.values();
  std::ostringstream diff;
  // Per rank, per expert and per node, through the queries (the state keeps them in one block).
  auto differ = [&](int n, auto of) {
    for (int i = 0; i < n; ++i) {
      if (of(a, i) != of(b, i)) return true;
    }
    return false;
  };
  if (a.ranks() != b.ranks() || a.experts() != b.experts()) {
    return ::testing::AssertionFailure() << "differ in shape: " << a.ranks() << " ranks, " << a.experts()
                                         << " experts against " << b.ranks() << ", " << b.experts();
  }
  const int R = a.ranks();
  if (differ(R, [](const PlacementState& s, int r) { return s.surplus(r); })) diff << " surplus";
  if (differ(R, [](const PlacementState& s, int r) { return s.spare(r); })) diff << " spare";
  if (differ(a.experts(), [](const PlacementState& s, int e) { return s.left(e); })) diff << " left";
  const bool slots_differ = differ(R, [](const PlacementState& s, int r) { return s.slots(r); });
  if (slots_differ) diff << " slots";
  if (x.cost != y.cost) diff << " cost (" << x.cost << " vs " << y.cost << ")";
  if (x.debt != y.debt) diff << " debt";
  if (x.pieces.size() != y.pieces.size()) {
    diff << " pieces";
  } else {
    for (size_t i = 0; i < x.pieces.size(); ++i) {
      const Piece &p = x.pieces[i], &q = y.pieces[i];
      if (p.expert != q.expert || p.rank != q.rank || p.tokens != q.tokens) diff << " piece " << i;
    }
  }
  if (differ(R, [](const PlacementState& s, int h) { return s.first_piece(h); }) ||
      differ(R, [](const PlacementState& s, int h) { return s.last_piece(h); }) || x.next != y.next) {
    diff << " piece lists";
  }
  if (x.open_other != y.open_other || differ(R, [](const PlacementState& s, int c) { return s.indexed_room(c); })) {
    diff << " bin index";
  }
  if (!slots_differ) {
    for (int c = 0; c < a.ranks(); ++c) {
      for (int i = 0; i < a.slots_per_rank() - a.slots(c); ++i) {
        if (a.held(c, i) != b.held(c, i)) diff << " held(" << c << ", " << i << ")";
      }
    }
  }
  if (diff.str().empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "differ in" << diff.str();
}

// Pieces as (expert, rank, tokens) triples, for readable comparisons.
inline std::vector<std::tuple<int, int, int64_t>> Triples(const std::vector<Piece>& pieces) {
  std::vector<std::tuple<int, int, int64_t>> out;
  for (const Piece& p : pieces) out.emplace_back(p.expert, p.rank, p.tokens);
  return out;
}

}  // namespace taot::planners::testing
