// Shortest augmenting paths (DF Crouse, "On implementing 2D rectangular assignment algorithms",
// IEEE TAES 52(4), 2016, pp. 1685-1686), in the variant of SciPy 1.10's
// scipy/optimize/rectangular_lsap/rectangular_lsap.cpp (PM Larsen): rows are added one at a
// time, and each scan of the columns goes over a list of the columns not yet reached that starts
// in reverse order and is compacted by moving its last entry into the hole. That order, and the
// preference for an unassigned column among equally short ones, decide which of several optimal
// assignments comes out; both are kept here for that reason.
#include "taot/planner/solvers/assignment.h"

#include <cstddef>
#include <limits>

namespace taot {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

struct Duals {
  std::vector<double> row;
  std::vector<double> column;
};

struct PathSearch {
  std::vector<double> shortest;   // per column: the shortest reduced path cost found so far
  std::vector<int> previous_row;  // per column: the row the shortest path reaches it from
  std::vector<bool> row_reached;
  std::vector<bool> column_reached;
  double length = 0;  // the shortest path's reduced cost to its free column
};

// The free column at the end of the shortest augmenting path from `row`, filling `search`.
int ShortestAugmentingPath(int n, std::span<const double> cost, const Duals& duals,
                           const std::vector<int>& row_of_column, int row, PathSearch& search) {
  std::vector<int> unreached(static_cast<size_t>(n));
  for (int k = 0; k < n; ++k) unreached[k] = n - 1 - k;
  search.shortest.assign(static_cast<size_t>(n), kInfinity);
  search.row_reached.assign(static_cast<size_t>(n), false);
  search.column_reached.assign(static_cast<size_t>(n), false);
  double reached = 0;
  while (true) {
    search.row_reached[row] = true;
    int best = -1;
    double lowest = kInfinity;
    for (int k = 0; k < static_cast<int>(unreached.size()); ++k) {
      const int column = unreached[k];
      const double reduced =
          reached + cost[static_cast<size_t>(row) * n + column] - duals.row[row] - duals.column[column];
      if (reduced < search.shortest[column]) {
        search.previous_row[column] = row;
        search.shortest[column] = reduced;
      }
      if (search.shortest[column] < lowest || (search.shortest[column] == lowest && row_of_column[column] < 0)) {
        lowest = search.shortest[column];
        best = k;
      }
    }
    reached = lowest;
    const int column = unreached[best];
    search.column_reached[column] = true;
    unreached[best] = unreached.back();
    unreached.pop_back();
    if (row_of_column[column] < 0) {
      search.length = reached;
      return column;
    }
    row = row_of_column[column];
  }
}

}  // namespace

std::vector<int> MaxWeightAssignment(int n, std::span<const double> weight) {
  // SciPy maximises by minimising the negated matrix.
  std::vector<double> cost(weight.begin(), weight.end());
  for (double& c : cost) c = -c;
  Duals duals{std::vector<double>(static_cast<size_t>(n), 0), std::vector<double>(static_cast<size_t>(n), 0)};
  std::vector<int> column_of_row(static_cast<size_t>(n), -1);
  std::vector<int> row_of_column(static_cast<size_t>(n), -1);
  PathSearch search;
  search.previous_row.assign(static_cast<size_t>(n), -1);
  for (int new_row = 0; new_row < n; ++new_row) {
    const int sink = ShortestAugmentingPath(n, cost, duals, row_of_column, new_row, search);
    duals.row[new_row] += search.length;
    for (int r = 0; r < n; ++r) {
      if (search.row_reached[r] && r != new_row) duals.row[r] += search.length - search.shortest[column_of_row[r]];
    }
    for (int c = 0; c < n; ++c) {
      if (search.column_reached[c]) duals.column[c] -= search.length - search.shortest[c];
    }
    // Flip the path: each column on it takes the row it was reached from.
    for (int column = sink;;) {
      const int row = search.previous_row[column];
      row_of_column[column] = row;
      const int freed = column_of_row[row];
      column_of_row[row] = column;
      column = freed;
      if (row == new_row) break;
    }
  }
  return column_of_row;
}

}  // namespace taot
