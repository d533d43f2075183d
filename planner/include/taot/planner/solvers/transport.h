// The result type shared by the exact transport solvers.
#pragma once

#include <cstdint>
#include <vector>

namespace taot {

// `amount` units move from supply index `from` to demand index `to`.
struct TransportFlow {
  int from = 0;
  int to = 0;
  int64_t amount = 0;
  bool operator==(const TransportFlow&) const = default;
};

// Flows of one transport problem and their total cost. Both solvers move
// min(total supply, total demand) units at minimum total cost (an unbalanced problem leaves the
// excess where it is, at no cost), with integer amounts.
struct TransportPlan {
  std::vector<TransportFlow> flows;
  double cost = 0;
};

}  // namespace taot
