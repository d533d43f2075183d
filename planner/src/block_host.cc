#include "taot/planner/block_host.h"

#include <cmath>

namespace taot {

void BlockHostLayer::Prepare(const std::shared_ptr<const Problem>& problem) {
  if (problem == problem_) return;
  problem_ = problem;
  const int R = problem->ranks();
  const Topology& topology = problem->topology;
  node_of_.assign(topology.node_of_rank().begin(), topology.node_of_rank().end());
  cost_.resize(static_cast<size_t>(R) * R);
  for (int a = 0; a < R; ++a) {
    for (int b = 0; b < R; ++b) {
      cost_[static_cast<size_t>(a) * R + b] = std::llround(topology.cost(a, b) * block::kCostScale);
    }
  }
  shape_ = {R, problem->experts, problem->slots_per_rank, node_of_.data(), cost_.data()};
  const auto pieces = static_cast<size_t>(block::MaxPieces(shape_)),
             entries = static_cast<size_t>(block::MaxEntries(shape_));
  piece_expert_.resize(pieces);
  piece_rank_.resize(pieces);
  piece_tokens_.resize(pieces);
  entry_piece_.resize(entries);
  entry_source_.resize(entries);
  entry_tokens_.resize(entries);
  scratch_.resize(static_cast<size_t>(block::ScratchWords(shape_)));
  layer_.piece_expert = piece_expert_.data();
  layer_.piece_rank = piece_rank_.data();
  layer_.piece_tokens = piece_tokens_.data();
  layer_.entry_piece = entry_piece_.data();
  layer_.entry_source = entry_source_.data();
  layer_.entry_tokens = entry_tokens_.data();
  layer_.counts = counts_;
  layer_.max_load = &max_load_;
  layer_.scratch = scratch_.data();
}

void BlockHostLayer::Plan(const LoadMatrix& load, int64_t cap, int threads) {
  layer_.load = load.row(0).data();
  layer_.cap = cap;
  for (int tid = threads - 1; tid >= 0; --tid) block::PlanLayer(shape_, layer_, tid, threads);
}

taot::Plan BlockHostLayer::ToPlan() const {
  taot::Plan plan;
  plan.replicas.reserve(static_cast<size_t>(counts_[0]));
  for (int32_t p = 0; p < counts_[0]; ++p) plan.replicas.push_back({piece_expert_[p], piece_rank_[p]});
  plan.assignments.reserve(static_cast<size_t>(counts_[1]));
  for (int32_t i = 0; i < counts_[1]; ++i) {
    const int32_t p = entry_piece_[i];
    plan.assignments.push_back({entry_source_[i], piece_expert_[p], piece_rank_[p], entry_tokens_[i]});
  }
  plan.target_missed = max_load_ > layer_.cap;
  Canonicalize(plan);
  return plan;
}

}  // namespace taot
