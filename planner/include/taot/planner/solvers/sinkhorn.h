// Entropic optimal transport (Sinkhorn-Knopp), as TAOT's published Phase 1 uses it.
#pragma once

#include <span>
#include <vector>

namespace taot {

// Runs `iterations` Sinkhorn scalings of the Gibbs kernel exp(-cost / epsilon) between
// marginals a (size m) and b (size n); cost is m x n row-major. Returns the m x n plan.
// A fixed number of iterations (no convergence test) matches the published method; marginals
// are only approximately met.
std::vector<double> Sinkhorn(std::span<const double> a, std::span<const double> b, std::span<const double> cost,
                             double epsilon, int iterations);

}  // namespace taot
