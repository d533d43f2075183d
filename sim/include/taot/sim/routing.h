// How a source rank's tokens spread over experts when each token picks top_k distinct experts
// with probability in proportion to the experts' weights. Shared by `taot gen` and the
// sequences of taot-sim, so both route the same way.
#pragma once

#include <cstdint>
#include <vector>

namespace taot::sim {

// Expected picks per expert, rounded to whole tokens: proportional to `weights`, capped at one
// pick per token (an expert gets at most `tokens` of them), summing to exactly tokens x top_k.
// Rounding gives the largest remainders the extra token (ties to the lower id). top_k must be
// at most weights.size().
std::vector<int64_t> RouteTokens(const std::vector<double>& weights, int top_k, int64_t tokens);

}  // namespace taot::sim
