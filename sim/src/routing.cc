#include "taot/sim/routing.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace taot::sim {
namespace {

// Shares of one source's picks: proportional to the weights, none above 1 / top_k.
std::vector<double> CappedShares(std::vector<double> w, int top_k) {
  const double cap = 1.0 / top_k;
  std::vector<char> capped(w.size(), 0);
  std::vector<double> p(w.size(), 0.0);
  while (true) {
    double free_weight = 0;
    int n_capped = 0;
    for (size_t e = 0; e < w.size(); ++e) {
      if (capped[e])
        ++n_capped;
      else
        free_weight += w[e];
    }
    const double free_mass = 1.0 - n_capped * cap;
    bool changed = false;
    for (size_t e = 0; e < w.size(); ++e) {
      if (capped[e]) {
        p[e] = cap;
        continue;
      }
      p[e] = free_weight > 0 ? w[e] / free_weight * free_mass : 0;
      if (p[e] > cap) {
        capped[e] = 1;
        changed = true;
      }
    }
    if (!changed) return p;
  }
}

// Whole counts summing to `total`: floors, then the largest remainders (ties to the lower id).
std::vector<int64_t> RoundToTotal(const std::vector<double>& share, int64_t total, int64_t cap) {
  std::vector<int64_t> count(share.size());
  std::vector<std::pair<double, size_t>> remainder;
  int64_t assigned = 0;
  for (size_t e = 0; e < share.size(); ++e) {
    const double exact = share[e] * static_cast<double>(total);
    count[e] = std::min(cap, static_cast<int64_t>(std::floor(exact)));
    assigned += count[e];
    remainder.push_back({exact - static_cast<double>(count[e]), e});
  }
  std::stable_sort(remainder.begin(), remainder.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = 0; assigned < total; i = (i + 1) % remainder.size()) {
    const size_t e = remainder[i].second;
    if (count[e] < cap) {
      ++count[e];
      ++assigned;
    }
  }
  return count;
}

}  // namespace

std::vector<int64_t> RouteTokens(const std::vector<double>& weights, int top_k, int64_t tokens) {
  return RoundToTotal(CappedShares(weights, top_k), tokens * top_k, tokens);
}

}  // namespace taot::sim
