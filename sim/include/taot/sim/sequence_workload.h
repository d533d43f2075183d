// Synthetic routing over many steps, with the temporal structure real MoE training shows:
// expert popularity drifts slowly from step to step, and now and then a few experts turn hot
// for a few steps (a burst). What the predictive planning mode bets on, and what it loses
// when the bet is wrong, both show here.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "taot/sim/workload.h"

namespace taot::sim {

struct SequenceOptions {
  int ranks = 16;
  int experts = 128;
  int top_k = 8;
  int64_t tokens_per_rank = 4096;  // per microbatch
  int layers = 48;
  int steps = 4;
  int microbatches = 4;
  // Initial imbalance of every layer (fraction, 0.5 = 50%) at step 0, microbatch 0, bursts
  // aside: each layer's skew is found by bisection to land on it. Bursts add to it.
  double imbalance = 0.5;
  // Per source and microbatch log-normal noise on the popularity (as in `taot gen`).
  double noise = 0.2;
  // Correlation of an expert's log-popularity from one step to the next: an AR(1) process
  // z(t+1) = drift z(t) + sqrt(1 - drift^2) xi, stationary N(0, 1). 1 keeps it fixed.
  double drift = 0.9;
  // Each step, each layer starts a burst with this probability: `burst_experts` random experts
  // get `burst_factor` times their popularity for `burst_steps` steps.
  double burst_rate = 0.1;
  int burst_experts = 2;
  int burst_steps = 3;
  double burst_factor = 4;
  uint64_t seed = 1;
};

// Checks every option; the error names it and the bad value.
absl::Status ValidateSequenceOptions(const SequenceOptions& options);

class SequenceWorkload final : public Workload {
 public:
  // Errors name the option and the bad value; an unreachable imbalance says what limits it.
  static absl::StatusOr<std::unique_ptr<SequenceWorkload>> Create(const SequenceOptions& options);

  WorkloadShape shape() const override;
  LoadMatrix Load(int step, int layer, int microbatch) const override;

  // The skew each layer uses (what the imbalance calibration found).
  const std::vector<double>& skews() const { return skew_; }

 private:
  explicit SequenceWorkload(const SequenceOptions& options) : o_(options) {}
  // Log-popularity of every expert of `layer` at `step`, bursts included, before the skew.
  std::vector<double> Popularity(int step, int layer) const;
  std::vector<double> BurstBoost(int step, int layer) const;
  LoadMatrix Route(int step, int layer, int microbatch, double skew, bool bursts) const;

  SequenceOptions o_;
  std::vector<double> skew_;
};

}  // namespace taot::sim
