// The maximum-weight assignment of a square matrix's rows to its columns, found the way SciPy's
// linear_sum_assignment(maximize=True) finds it, so that among several optimal assignments it
// returns the same one (the EPLB fixtures' GPU relabelling was made with SciPy 1.10).
#pragma once

#include <span>
#include <vector>

namespace taot {

// `weight` is n x n, row-major, finite. Returns column_of_row (a permutation of 0..n-1) with
// the largest total weight.
std::vector<int> MaxWeightAssignment(int n, std::span<const double> weight);

}  // namespace taot
