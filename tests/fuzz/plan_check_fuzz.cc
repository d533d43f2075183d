// The check on a plugin's plan (ValidatePlan), on any plan a plugin could write: the bytes are
// the counts and buffers of taot_plan_v1 as a plugin leaves them, decoded the way the daemon
// decodes them (counts outside the buffers refused, then entry by entry), against a fixed
// request. A plan the check lets through must keep the rules it promises, checked here again
// independently, and must score.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "fuzz_support.h"
#include "taot/planner/plan_validator.h"
#include "taot/planner/scorecard.h"
#include "taot/planner_plugin.h"

namespace {

using taot::fuzz::Require;

// 4 ranks on 2 nodes, 8 experts, 2 slots, one hot expert and a replica already in place.
taot::PlanRequest Request() {
  taot::PlanRequest r = taot::EmptyRequest(
      std::make_shared<const taot::Problem>(taot::Problem{*taot::Topology::Uniform(4, 2), 8, 2, 1 << 20}));
  for (int s = 0; s < 4; ++s) {
    for (int e = 0; e < 8; ++e) r.load.at(s, e) = e == 0 ? 400 : (s + e) % 3;
  }
  r.resident = {{0, 2}};
  Require(taot::ValidateRequest(r).ok(), "the fixed request is valid");
  return r;
}

// Reads the front of `data` as a T, zero where the bytes run out (the daemon's buffers start
// zeroed).
template <typename T>
T Take(const uint8_t*& data, size_t& size) {
  T value{};
  const size_t n = std::min(size, sizeof(T));
  std::memcpy(&value, data, n);
  data += n;
  size -= n;
  return value;
}

// What the daemon makes of a plugin's output, or nothing when the counts lie outside the
// buffers it passed.
std::optional<taot::Plan> Decode(const taot::PlanRequest& request, const uint8_t* data, size_t size) {
  const int32_t replica_capacity = request.ranks() * request.slots_per_rank();
  const int32_t assignment_capacity = request.ranks() * replica_capacity;
  const auto replica_count = Take<int32_t>(data, size);
  const auto assignment_count = Take<int32_t>(data, size);
  if (replica_count < 0 || replica_count > replica_capacity || assignment_count < 0 ||
      assignment_count > assignment_capacity) {
    return std::nullopt;
  }
  taot::Plan plan;
  for (int32_t i = 0; i < replica_count; ++i) {
    const auto r = Take<taot_replica_v1>(data, size);
    plan.replicas.push_back({r.expert, r.rank});
  }
  for (int32_t i = 0; i < assignment_count; ++i) {
    const auto a = Take<taot_assignment_v1>(data, size);
    plan.assignments.push_back({a.source, a.expert, a.rank, a.tokens});
  }
  return plan;
}

// ValidatePlan's promises, checked the plain way.
void CheckKeepsTheRules(const taot::PlanRequest& request, const taot::Plan& plan) {
  std::set<std::pair<int, int>> held;
  std::vector<int> per_rank(static_cast<size_t>(request.ranks()), 0);
  for (const taot::Replica& r : plan.replicas) {
    Require(r.expert >= 0 && r.expert < request.experts() && r.rank >= 0 && r.rank < request.ranks(),
            "replicas name an expert and a rank in range");
    Require(request.home_of(r.expert) != r.rank, "no replica on its expert's home");
    Require(held.insert({r.expert, r.rank}).second, "no replica twice");
    Require(++per_rank[static_cast<size_t>(r.rank)] <= request.slots_per_rank(), "at most K replicas per rank");
  }
  std::set<std::tuple<int, int, int>> seen;
  std::map<std::pair<int, int>, int64_t> sent;
  for (const taot::Assignment& a : plan.assignments) {
    Require(a.source >= 0 && a.source < request.ranks(), "assignments name a source in range");
    Require(held.contains({a.expert, a.rank}), "assignments go to a rank holding the expert");
    Require(a.tokens > 0 && a.tokens <= request.load.at(a.source, a.expert), "assignments move tokens it has");
    Require(seen.insert({a.source, a.expert, a.rank}).second, "no assignment twice");
    int64_t& total = sent[{a.source, a.expert}];
    total += a.tokens;
    Require(total <= request.load.at(a.source, a.expert), "tokens are conserved");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const taot::PlanRequest request = Request();
  const std::optional<taot::Plan> plan = Decode(request, data, size);
  if (!plan) return 0;
  const absl::Status valid = taot::ValidatePlan(request, *plan);
  if (!valid.ok()) {
    Require(!valid.message().empty(), "a refused plan gets a message");
    return 0;
  }
  CheckKeepsTheRules(request, *plan);
  int64_t total = 0;
  for (int64_t n : request.load.data()) total += n;
  const taot::Scorecard score = taot::Score(request, *plan, 0);
  Require(score.tokens_local + score.tokens_intra_node + score.tokens_inter_node == total,
          "the scorecard places every token");
  Require(score.imbalance_after_pct >= 0, "imbalance is never negative");
  return 0;
}
