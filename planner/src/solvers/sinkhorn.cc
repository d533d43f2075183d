#include "taot/planner/solvers/sinkhorn.h"

#include <cmath>

namespace taot {

std::vector<double> Sinkhorn(std::span<const double> a, std::span<const double> b, std::span<const double> cost,
                             double epsilon, int iterations) {
  const size_t m = a.size();
  const size_t n = b.size();
  std::vector<double> kernel(m * n);
  for (size_t k = 0; k < m * n; ++k) kernel[k] = std::exp(-cost[k] / epsilon);
  std::vector<double> u(m, 1.0), v(n, 1.0);
  for (int it = 0; it < iterations; ++it) {
    for (size_t i = 0; i < m; ++i) {
      double kv = 0;
      for (size_t j = 0; j < n; ++j) kv += kernel[i * n + j] * v[j];
      u[i] = kv > 0 ? a[i] / kv : 0;
    }
    for (size_t j = 0; j < n; ++j) {
      double ku = 0;
      for (size_t i = 0; i < m; ++i) ku += kernel[i * n + j] * u[i];
      v[j] = ku > 0 ? b[j] / ku : 0;
    }
  }
  std::vector<double> plan(m * n);
  for (size_t i = 0; i < m; ++i) {
    for (size_t j = 0; j < n; ++j) plan[i * n + j] = u[i] * kernel[i * n + j] * v[j];
  }
  return plan;
}

}  // namespace taot
