// LLEP, least-loaded expert parallelism (Salesforce), ported from its code:
// SalesforceAIResearch/LeastLoadedEP @ 034974620fc7fbeac98e01b71f1167930761c849,
// llep/gpt_oss_llep.py, `compute_llep_lpt_plan` (the plan) and `llep_lpt_plan_to_compute_ranks`
// (how a plan's token ranges become per-source sends).
//
// What the code does: the cap is int(max_tokens_factor x (total // R)). Experts go in decreasing
// token count (LPT). A GPU's load is its *effective* load: tokens already assigned plus its native
// experts not yet processed, so no chunk lands on a GPU that its own natives will fill later.
// The native GPU takes as much of the expert as fits under the cap; the rest spills in chunks
// (each as large as the helper's room allows, never under min_tokens_per_gemm unless it is the
// last) to the other GPUs in increasing effective load; when every helper is full, the rest is
// forced onto the least-loaded one. A native GPU already at the cap spills the whole expert in
// one pass over the helpers (a helper too small for a chunk is not revisited), while a native
// that keeps a part re-ranks the helpers after every chunk (so a small helper skipped earlier can
// take the final remainder). An expert's tokens are numbered source after source in ascending rank
// order and each chunk is a range of those numbers; the native's chunk comes first.
//
// Deviations, kept on purpose:
// - K: the real code has no slot limit. A slot is memory (the client has K guest slots), so a GPU
//   with no free slot that does not already hold the expert is not a helper. This is the code's
//   own rule for a helper that cannot take a chunk: it is passed over for the next in load order,
//   and the forced remainder goes to the least-loaded GPU that can hold it. With no such GPU the
//   code's own no-helper branch keeps the tokens on the native GPU. K = 0 therefore plans nothing
//   (the real code still places replicas).
// - The request's target_imbalance_pct and resident replicas: LLEP has no notion of either; the
//   cap alone decides.
//
// Where C++ must match Python: the cap is one double product truncated toward zero, as `int()`
// does; every other quantity is an integer. Python's `sorted` is stable, so ties in expert counts
// go to the lower expert id and ties in effective load to the lower GPU id (std::stable_sort over
// ids in ascending order does the same).
#include <algorithm>
#include <map>
#include <numeric>
#include <utility>

#include "planners/builtin.h"
#include "planners/params.h"
#include "planners/plan_building.h"
#include "planners/summing_planner.h"

namespace taot::planners {
namespace {

// Tokens [start, end) of an expert, in its global token order, computed on `gpu`.
struct Chunk {
  int gpu = 0;
  int64_t start = 0;
  int64_t end = 0;
};

// The cap every GPU aims under (`max_tokens_per_gpu`).
int64_t MaxTokensPerGpu(int64_t total, int ranks, double factor) {
  const int64_t balanced = total / ranks;
  const int64_t cap = balanced > 0 ? static_cast<int64_t>(factor * static_cast<double>(balanced)) : total;
  return std::max<int64_t>(cap, 1);
}

// The LPT pass over the experts: the real code's assigned and pending native loads, and our
// guest slots.
class LptPass {
 public:
  LptPass(const PlanRequest& request, const LoadSums& sums, int64_t max_tokens, int64_t min_tokens_per_gemm)
      : request_(request),
        max_tokens_(max_tokens),
        min_tokens_per_gemm_(min_tokens_per_gemm),
        assigned_(static_cast<size_t>(request.ranks()), 0),
        pending_(sums.rank_loads),
        free_slots_(static_cast<size_t>(request.ranks()), request.slots_per_rank()) {}

  // The chunks of `expert` (which has `tokens` > 0 tokens); the native's chunk, if any, first.
  std::vector<Chunk> Place(int expert, int64_t tokens);

 private:
  int64_t Effective(int gpu) const { return assigned_[gpu] + pending_[gpu]; }
  int64_t Available(int gpu) const { return max_tokens_ - Effective(gpu); }
  bool TooSmall(int64_t chunk, int64_t remaining) const { return chunk < min_tokens_per_gemm_ && remaining > chunk; }
  // The GPUs that may take a chunk of the current expert, least effective load first.
  std::vector<int> Helpers() const;
  void Give(int gpu, int64_t start, int64_t tokens);
  // The native kept a part: re-rank the helpers before every chunk.
  void SpillAfterNative(int64_t offset, int64_t remaining);
  // The native is full: one pass over the helpers as ranked once.
  void SpillEverything(int64_t tokens);

  const PlanRequest& request_;
  int64_t max_tokens_;
  int64_t min_tokens_per_gemm_;
  std::vector<int64_t> assigned_;
  std::vector<int64_t> pending_;
  std::vector<int> free_slots_;
  // The expert being placed.
  int native_ = 0;
  std::vector<char> holds_;
  std::vector<Chunk> chunks_;
};

std::vector<int> LptPass::Helpers() const {
  std::vector<int> helpers;
  for (int g = 0; g < request_.ranks(); ++g) {
    if (g != native_ && (holds_[g] || free_slots_[g] > 0)) helpers.push_back(g);
  }
  std::stable_sort(helpers.begin(), helpers.end(), [&](int a, int b) { return Effective(a) < Effective(b); });
  return helpers;
}

void LptPass::Give(int gpu, int64_t start, int64_t tokens) {
  chunks_.push_back({gpu, start, start + tokens});
  assigned_[gpu] += tokens;
  if (gpu != native_ && !holds_[gpu]) {
    holds_[gpu] = 1;
    --free_slots_[gpu];
  }
}

void LptPass::SpillAfterNative(int64_t offset, int64_t remaining) {
  while (remaining > 0) {
    const std::vector<int> helpers = Helpers();
    if (helpers.empty()) {
      chunks_.front().end += remaining;
      assigned_[native_] += remaining;
      return;
    }
    auto taker = std::find_if(helpers.begin(), helpers.end(), [&](int g) {
      return Available(g) > 0 && !TooSmall(std::min(remaining, Available(g)), remaining);
    });
    // Every helper full: the code forces the rest onto the least-loaded one.
    const int64_t chunk = taker == helpers.end() ? remaining : std::min(remaining, Available(*taker));
    Give(taker == helpers.end() ? helpers.front() : *taker, offset, chunk);
    offset += chunk;
    remaining -= chunk;
  }
}

void LptPass::SpillEverything(int64_t tokens) {
  const std::vector<int> helpers = Helpers();
  if (helpers.empty()) {
    Give(native_, 0, tokens);
    return;
  }
  // The pass reads each helper's room as ranked: a helper's room changes only once it is passed.
  int64_t offset = 0;
  for (int g : helpers) {
    if (offset == tokens) break;
    const int64_t chunk = std::min(tokens - offset, Available(g));
    if (chunk <= 0 || TooSmall(chunk, tokens - offset)) continue;
    Give(g, offset, chunk);
    offset += chunk;
  }
  if (offset < tokens) Give(helpers.front(), offset, tokens - offset);
}

std::vector<Chunk> LptPass::Place(int expert, int64_t tokens) {
  native_ = request_.home_of(expert);
  holds_.assign(static_cast<size_t>(request_.ranks()), 0);
  chunks_.clear();
  pending_[native_] -= tokens;
  const int64_t native_room = Available(native_);
  if (native_room >= tokens) {
    Give(native_, 0, tokens);
  } else if (native_room > 0) {
    Give(native_, 0, native_room);
    SpillAfterNative(native_room, tokens - native_room);
  } else {
    SpillEverything(tokens);
  }
  return chunks_;
}

// Adds the replicas and per-source assignments of one expert's chunks: source s owns the token
// numbers [sum of loads of sources < s, that plus its own load), and a chunk away from the native
// takes the overlap from each source. A GPU forced a second chunk of the expert holds one replica.
void AppendChunks(const PlanRequest& request, int expert, const std::vector<Chunk>& chunks, Plan& plan) {
  const int native = request.home_of(expert);
  std::map<int, std::map<int, int64_t>> tokens_by_gpu;  // gpu -> source -> tokens
  for (const Chunk& chunk : chunks) {
    if (chunk.gpu == native) continue;
    std::map<int, int64_t>& by_source = tokens_by_gpu[chunk.gpu];
    int64_t source_start = 0;
    for (int s = 0; s < request.ranks(); ++s) {
      const int64_t source_end = source_start + request.load.at(s, expert);
      const int64_t overlap = std::min(source_end, chunk.end) - std::max(source_start, chunk.start);
      if (overlap > 0) by_source[s] += overlap;
      source_start = source_end;
    }
  }
  for (const auto& [gpu, by_source] : tokens_by_gpu) {
    plan.replicas.push_back({expert, gpu});
    for (const auto& [source, tokens] : by_source) plan.assignments.push_back({source, expert, gpu, tokens});
  }
}

class LlepPlanner final : public SummingPlanner {
 public:
  LlepPlanner(double max_tokens_factor, int64_t min_tokens_per_gemm)
      : max_tokens_factor_(max_tokens_factor), min_tokens_per_gemm_(min_tokens_per_gemm) {}
  std::string_view name() const override { return "llep"; }

 private:
  absl::StatusOr<Plan> PlanFromSums(const PlanRequest& request, const LoadSums& sums) override;

  double max_tokens_factor_;
  int64_t min_tokens_per_gemm_;
};

absl::StatusOr<Plan> LlepPlanner::PlanFromSums(const PlanRequest& request, const LoadSums& sums) {
  LptPass pass(request, sums, MaxTokensPerGpu(sums.total, request.ranks(), max_tokens_factor_), min_tokens_per_gemm_);
  std::vector<int> order(static_cast<size_t>(request.experts()));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return sums.expert_totals[a] > sums.expert_totals[b]; });
  Plan plan;
  for (int e : order) {
    if (sums.expert_totals[e] == 0) continue;
    AppendChunks(request, e, pass.Place(e, sums.expert_totals[e]), plan);
  }
  return plan;
}

}  // namespace

PlannerOr MakeLlep(const PlannerParams& params) {
  ParamReader reader("llep", params);
  const double factor = reader.Double("max_tokens_factor", 1.1, 1.0, 100.0);
  const int64_t min_tokens_per_gemm = reader.Int("min_tokens_per_gemm", 1024, 1, int64_t{1} << 40);
  if (absl::Status s = reader.Finish(); !s.ok()) return s;
  return std::make_unique<LlepPlanner>(factor, min_tokens_per_gemm);
}

}  // namespace taot::planners
