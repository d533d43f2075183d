// Synthetic load matrices with a chosen initial imbalance (`taot gen`, docs/formats.md).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "taot/planner/plan_request.h"

namespace taot::sim {

// The model: every source rank routes tokens_per_rank tokens to top_k distinct experts each.
// Expert popularity is log-normal, w_e = exp(skew · z_e), shared by all sources (so the same
// experts are hot everywhere), times `hot_factor` for `hot_experts` randomly chosen experts
// (a burst); each source perturbs it by its own log-normal noise exp(noise · ξ_se - noise²/2).
// A source's expected counts follow its weights, capped at one pick per token per expert (an
// expert gets at most tokens_per_rank of a source's tokens) and rounded to whole tokens that
// sum exactly to tokens_per_rank x top_k. When `imbalance` is set, `skew` is found by
// bisection so that the initial imbalance lands within `tolerance_pp` of it.
struct CaseOptions {
  int ranks = 16;
  int experts = 128;
  int ranks_per_node = 8;
  double inter_node_cost = 3.0;
  int slots_per_rank = 2;
  int64_t expert_bytes = 9437184;  // a Qwen3-30B-A3B expert in bf16 (3 x 2048 x 768 x 2 bytes)
  int top_k = 8;
  int64_t tokens_per_rank = 4096;
  std::optional<double> imbalance;  // target initial imbalance as a fraction (0.7 = 70%)
  double tolerance_pp = 0.5;
  double skew = 0.0;  // used as given when `imbalance` is unset
  double noise = 0.2;
  int hot_experts = 0;
  double hot_factor = 10.0;
  uint64_t seed = 1;
  std::optional<double> target_imbalance_pct;  // copied into the case for the planners
};

struct GeneratedCase {
  PlanRequest request;
  double imbalance_pct = 0;  // achieved initial imbalance
  double skew = 0;           // the skew used
  std::vector<int> hot_experts;
};

// The options are `taot gen`'s flags, and errors name the flag (e.g. "--imbalance: 0.005 is below
// what the noise alone gives (2.1%)"); sizes are held to the limits of plan_request.h.
absl::StatusOr<GeneratedCase> GenerateCase(const CaseOptions& options);

// The "meta" object a generated CASE carries: options, seed and achieved imbalance, so that a
// case file says how to make it again.
std::string CaseMetaJson(const CaseOptions& options, const GeneratedCase& generated);

}  // namespace taot::sim
