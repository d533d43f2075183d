#include "taot/planner/block_host.h"

#include <algorithm>
#include <barrier>
#include <cmath>
#include <thread>

namespace taot {

BlockShapeArrays::BlockShapeArrays(const Problem& problem) {
  const int R = problem.ranks();
  const Topology& topology = problem.topology;
  node_of.assign(topology.node_of_rank().begin(), topology.node_of_rank().end());
  cost.resize(static_cast<size_t>(R) * R);
  for (int a = 0; a < R; ++a) {
    for (int b = 0; b < R; ++b) {
      cost[static_cast<size_t>(a) * R + b] = std::llround(topology.cost(a, b) * block::kCostScale);
    }
  }
  by_node.resize(static_cast<size_t>(R));
  node_start.resize(static_cast<size_t>(R) + 1);
  const int32_t nodes = block::IndexNodes(R, node_of.data(), by_node.data(), node_start.data());
  shape = {R,           problem.experts, problem.slots_per_rank, node_of.data(),
           cost.data(), nodes,           by_node.data(),         node_start.data()};
}

void BlockHostLayer::Prepare(const std::shared_ptr<const Problem>& problem) {
  if (problem == problem_) return;
  problem_ = problem;
  arrays_ = std::make_unique<BlockShapeArrays>(*problem);
  shape_ = arrays_->shape;
  const auto pieces = static_cast<size_t>(block::MaxPieces(shape_)),
             entries = static_cast<size_t>(block::MaxEntries(shape_));
  piece_expert_.resize(pieces);
  piece_rank_.resize(pieces);
  piece_tokens_.resize(pieces);
  // The split's bound is R K (R + 1) entries (32 MB at R = 1024), few of them used: left
  // uninitialised, so that only what a plan writes is touched.
  entry_piece_.reset(new int32_t[entries]);
  entry_source_.reset(new int32_t[entries]);
  entry_tokens_.reset(new int64_t[entries]);
  scratch_.resize(static_cast<size_t>(block::ScratchWords(shape_)));
  scratch32_.resize(static_cast<size_t>(block::Scratch32Words(shape_)));
  layer_.piece_expert = piece_expert_.data();
  layer_.piece_rank = piece_rank_.data();
  layer_.piece_tokens = piece_tokens_.data();
  layer_.entry_piece = entry_piece_.get();
  layer_.entry_source = entry_source_.get();
  layer_.entry_tokens = entry_tokens_.get();
  layer_.counts = counts_;
  layer_.max_load = &max_load_;
  layer_.scratch = scratch_.data();
  layer_.scratch32 = scratch32_.data();
}

void BlockHostLayer::Plan(const LoadMatrix& load, int64_t cap, std::span<const Replica> resident, int threads) {
  layer_.load = load.row(0).data();
  layer_.cap = cap;
  sorted_resident_.assign(resident.begin(), resident.end());
  std::sort(sorted_resident_.begin(), sorted_resident_.end());
  resident_.clear();
  for (const Replica& r : sorted_resident_) {
    resident_.push_back(r.expert);
    resident_.push_back(r.rank);
  }
  layer_.resident = resident_.data();
  layer_.resident_count = static_cast<int32_t>(sorted_resident_.size());
  if (threads <= 1) {
    block::PlanLayer(shape_, layer_, 0, 1);
    return;
  }
  // A block of `threads` threads, as on a device: each with the block's barrier.
  struct Barrier final : block::HostBarrier {
    explicit Barrier(int n) : barrier(n) {}
    void Wait() override { barrier.arrive_and_wait(); }
    std::barrier<> barrier;
  } barrier(threads);
  auto run = [&](int tid) {
    block::host_barrier = &barrier;
    block::PlanLayer(shape_, layer_, tid, threads);
    block::host_barrier = nullptr;
  };
  std::vector<std::thread> others;
  for (int tid = 1; tid < threads; ++tid) others.emplace_back(run, tid);
  run(0);
  for (std::thread& t : others) t.join();
}

taot::Plan BlockHostLayer::ToPlan() {
  taot::Plan plan;
  plan.replicas.reserve(static_cast<size_t>(counts_[0]));
  for (int32_t p = 0; p < counts_[0]; ++p) plan.replicas.push_back({piece_expert_[p], piece_rank_[p]});
  // Canonical order (source, expert, rank) without a sort: the entries come by piece, and the
  // pieces by (expert, rank), each (piece, source) once, so a stable counting sort by source is it.
  const int R = shape_.ranks;
  by_source_.assign(static_cast<size_t>(R) + 1, 0);
  for (int32_t i = 0; i < counts_[1]; ++i) ++by_source_[static_cast<size_t>(entry_source_[i]) + 1];
  for (int r = 0; r < R; ++r) by_source_[static_cast<size_t>(r) + 1] += by_source_[static_cast<size_t>(r)];
  plan.assignments.resize(static_cast<size_t>(counts_[1]));
  for (int32_t i = 0; i < counts_[1]; ++i) {
    const int32_t p = entry_piece_[i];
    plan.assignments[static_cast<size_t>(by_source_[static_cast<size_t>(entry_source_[i])]++)] = {
        entry_source_[i], piece_expert_[p], piece_rank_[p], entry_tokens_[i]};
  }
  plan.target_missed = max_load_ > layer_.cap;
  return plan;
}

}  // namespace taot
