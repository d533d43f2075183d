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
  ResidentPairs(resident, sorted_resident_, resident_);
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

taot::Plan BlockHostLayer::ToPlan() { return BlockPlanToPlan(layer_, shape_.ranks, by_source_); }

void ResidentPairs(std::span<const Replica> resident, std::vector<Replica>& sorted, std::vector<int32_t>& pairs) {
  sorted.assign(resident.begin(), resident.end());
  std::sort(sorted.begin(), sorted.end());
  pairs.clear();
  for (const Replica& r : sorted) {
    pairs.push_back(r.expert);
    pairs.push_back(r.rank);
  }
}

taot::Plan BlockPlanToPlan(const block::Layer& layer, int32_t ranks, std::vector<int64_t>& by_source) {
  const int32_t pieces = layer.counts[0], entries = layer.counts[1];
  taot::Plan plan;
  plan.replicas.reserve(static_cast<size_t>(pieces));
  for (int32_t p = 0; p < pieces; ++p) plan.replicas.push_back({layer.piece_expert[p], layer.piece_rank[p]});
  // Canonical order (source, expert, rank) without a sort: the entries come by piece, and the
  // pieces by (expert, rank), each (piece, source) once, so a stable counting sort by source is it.
  by_source.assign(static_cast<size_t>(ranks) + 1, 0);
  for (int32_t i = 0; i < entries; ++i) ++by_source[static_cast<size_t>(layer.entry_source[i]) + 1];
  for (int32_t r = 0; r < ranks; ++r) by_source[static_cast<size_t>(r) + 1] += by_source[static_cast<size_t>(r)];
  plan.assignments.resize(static_cast<size_t>(entries));
  for (int32_t i = 0; i < entries; ++i) {
    const int32_t p = layer.entry_piece[i];
    plan.assignments[static_cast<size_t>(by_source[static_cast<size_t>(layer.entry_source[i])]++)] = {
        layer.entry_source[i], layer.piece_expert[p], layer.piece_rank[p], layer.entry_tokens[i]};
  }
  plan.target_missed = *layer.max_load > layer.cap;
  return plan;
}

}  // namespace taot
