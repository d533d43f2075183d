#include "planners/token_split.h"

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <utility>

#include "taot/planner/solvers/min_cost_transport.h"
#include "taot/planner/solvers/tree_transport.h"

namespace taot::planners {
namespace {

// Rows [first, first + kRows) of `experts`' columns of `load`, into `columns` (one column of
// `length` values per expert, side by side).
template <int kRows>
void GatherRows(const LoadMatrix& load, const std::vector<int>& experts, int first, int64_t* columns, int length) {
  const int64_t* rows[kRows];
  for (int b = 0; b < kRows; ++b) rows[b] = load.row(first + b).data();
  int64_t* out = columns + first;
  for (const int e : experts) {
    for (int b = 0; b < kRows; ++b) out[b] = rows[b][e];
    out += length;
  }
}

// A whole move's assignments, source by source, as a counted range: vector::insert then sizes
// the assignments once and constructs each in place, where push_back checks the capacity and
// stores the new end at every entry (a tenth of a burst's plan).
struct WholeMoveEntry {
  using iterator_category = std::random_access_iterator_tag;
  using value_type = Assignment;
  using difference_type = std::ptrdiff_t;
  using pointer = const Assignment*;
  using reference = Assignment;  // made on reading: insert reads each entry once, to construct it

  const int64_t* column;
  int32_t expert, guest, from;

  Assignment operator*() const { return {from, expert, guest, column[from]}; }
  WholeMoveEntry& operator++() {
    ++from;
    return *this;
  }
  WholeMoveEntry& operator--() {
    --from;
    return *this;
  }
  WholeMoveEntry& operator+=(difference_type n) {
    from += static_cast<int32_t>(n);
    return *this;
  }
  difference_type operator-(const WholeMoveEntry& o) const { return from - o.from; }
  bool operator==(const WholeMoveEntry& o) const { return from == o.from; }
};

}  // namespace

void CheapestSplit::SplitExpert(const PlanRequest& request, int expert, std::span<int64_t> column, Plan& plan) {
  const Topology& topo = request.topology();
  const int R = request.ranks();
  const int home = request.home_of(expert);
  auto emit = [&](int from, int to, int64_t amount) {
    if (to != home) plan.assignments.push_back({from, expert, to, amount});
  };
  if (topo.tree_costs()) {
    std::sort(demand_ranks_.begin(), demand_ranks_.end(),
              [&](int a, int b) { return std::make_pair(topo.node_of(a), a) < std::make_pair(topo.node_of(b), b); });
    // Supply and demand balance (both are the expert's total): the home takes what the guests
    // leave. The column is scratch: the match consumes it.
    MatchOnTree(topo, column, demand_, demand_ranks_, emit, home);
    return;
  }
  std::vector<double> cost(static_cast<size_t>(R) * R);
  for (int s = 0; s < R; ++s) {
    for (int r = 0; r < R; ++r) cost[static_cast<size_t>(s) * R + r] = topo.cost(s, r);
  }
  for (const TransportFlow& f : SolveMinCostTransport(column, demand_, cost).flows) {
    emit(f.from, f.to, f.amount);
  }
  std::fill(demand_.begin(), demand_.end(), 0);
}

void CheapestSplit::MoveWhole(int expert, int guest, std::span<const int64_t> column, Plan& plan) {
  const auto sources = static_cast<int32_t>(column.size());
  // A burst's hot expert has tokens from every source. Loads are never negative, so a source
  // has none exactly where tokens - 1 is negative: one OR of them all (vectorised) tells.
  uint64_t none_bits = 0;
  for (const int64_t tokens : column) none_bits |= static_cast<uint64_t>(tokens - 1);
  if ((none_bits >> 63) == 0) {
    const WholeMoveEntry first{column.data(), expert, guest, 0};
    WholeMoveEntry last = first;
    last += sources;
    plan.assignments.insert(plan.assignments.end(), first, last);
    return;
  }
  for (int from = 0; from < sources; ++from) {
    if (column[from] > 0) plan.assignments.push_back({from, expert, guest, column[from]});
  }
}

void CheapestSplit::Append(const PlanRequest& request, const std::vector<int64_t>& expert_totals,
                           std::vector<GuestShare>& shares, Plan& plan) {
  std::sort(shares.begin(), shares.end(), [](const GuestShare& a, const GuestShare& b) {
    return a.expert != b.expert ? a.expert < b.expert : a.rank < b.rank;
  });
  demand_.assign(static_cast<size_t>(request.ranks()), 0);
  plan.replicas.reserve(plan.replicas.size() + shares.size());
  // The split experts' columns of the load matrix, gathered in one pass over its rows: reading
  // them expert by expert strides across every row (measured: 7% of a plan at EP64).
  split_experts_.clear();
  split_experts_.reserve(shares.size());
  demand_ranks_.reserve(static_cast<size_t>(request.ranks()));
  for (size_t i = 0; i < shares.size();) {
    size_t j = i;
    int64_t away = 0;
    for (; j < shares.size() && shares[j].expert == shares[i].expert; ++j) away += shares[j].tokens;
    if (away > 0) split_experts_.push_back(shares[i].expert);
    i = j;
  }
  const int R = request.ranks();
  const size_t X = split_experts_.size();
  // Room for the most assignments the split can make: each move empties a source's supply or a
  // demand, so an expert makes at most R + its guests. Untouched capacity costs address space,
  // not time (its pages are never faulted in), where growing the array by doubling copied it and
  // faulted in twice its size: a first plan at EP1024 (400K assignments) took 2.2x a later one.
  plan.assignments.reserve(plan.assignments.size() + X * static_cast<size_t>(R) + shares.size());
  columns_.resize(X * static_cast<size_t>(R));
  // Rows in blocks: each expert's index is read once per block, and the block's values land side
  // by side in its column (a third of the instructions of one row at a time at EP256).
  constexpr int kBlock = 8;
  int src = 0;
  for (; src + kBlock <= R; src += kBlock) GatherRows<kBlock>(request.load, split_experts_, src, columns_.data(), R);
  for (; src < R; ++src) GatherRows<1>(request.load, split_experts_, src, columns_.data(), R);
  size_t x = 0;
  for (size_t i = 0; i < shares.size();) {
    const int expert = shares[i].expert;
    size_t j = i;
    int64_t away = 0;
    demand_ranks_.clear();
    for (; j < shares.size() && shares[j].expert == expert; ++j) {
      plan.replicas.push_back({expert, shares[j].rank});
      demand_[shares[j].rank] = shares[j].tokens;
      away += shares[j].tokens;
      demand_ranks_.push_back(shares[j].rank);
    }
    auto next_column = [&] { return std::span<int64_t>(columns_).subspan(x++ * R, static_cast<size_t>(R)); };
    if (away > 0 && j - i == 1 && away == expert_totals[expert]) {
      MoveWhole(expert, shares[i].rank, next_column(), plan);
      demand_[shares[i].rank] = 0;
    } else if (away > 0) {
      demand_[request.home_of(expert)] = expert_totals[expert] - away;
      demand_ranks_.push_back(request.home_of(expert));
      SplitExpert(request, expert, next_column(), plan);
    } else {
      for (size_t k = i; k < j; ++k) demand_[shares[k].rank] = 0;
    }
    i = j;
  }
}

}  // namespace taot::planners
