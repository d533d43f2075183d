#include "taot/planner/plan_json.h"

#include <limits>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "taot/planner/json_fields.h"

namespace taot {
namespace {

using json_fields::Index;
using json_fields::Join;
using json_fields::Reader;
using nlohmann::json;

constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();

json StatsToJson(const Scorecard& s) {
  return {
      {"imbalance_before_pct", s.imbalance_before_pct},
      {"imbalance_after_pct", s.imbalance_after_pct},
      {"target_imbalance_pct", s.target_imbalance_pct},
      {"target_met", s.target_met},
      {"intra_node_transfers", s.intra_node_transfers},
      {"inter_node_transfers", s.inter_node_transfers},
      {"reused_replicas", s.reused_replicas},
      {"weighted_cost", s.weighted_cost},
      {"bytes_moved_intra_node", s.bytes_moved_intra_node},
      {"bytes_moved_inter_node", s.bytes_moved_inter_node},
      {"tokens_local", s.tokens_local},
      {"tokens_intra_node", s.tokens_intra_node},
      {"tokens_inter_node", s.tokens_inter_node},
      {"plan_time_us", s.plan_time_us},
  };
}

}  // namespace

std::string ScorecardToJson(const Scorecard& score) { return StatsToJson(score).dump(); }

std::string PlanToJson(std::string_view planner, const Plan& plan, const Scorecard& score) {
  json replicas = json::array();
  for (const Replica& r : plan.replicas) replicas.push_back({{"expert", r.expert}, {"rank", r.rank}});
  json assignments = json::array();
  for (const Assignment& a : plan.assignments) {
    assignments.push_back({{"source", a.source}, {"expert", a.expert}, {"rank", a.rank}, {"tokens", a.tokens}});
  }
  json out = {{"planner", planner},
              {"replicas", std::move(replicas)},
              {"assignments", std::move(assignments)},
              {"stats", StatsToJson(score)}};
  return out.dump(2) + "\n";
}

absl::StatusOr<Plan> ParsePlan(std::string_view text) {
  absl::StatusOr<json> parsed = json_fields::Parse(text);
  if (!parsed.ok()) return parsed.status();
  const json& root = *parsed;
  Reader in;
  if (in.Object(root, "") == nullptr) return in.status();
  in.OnlyKeys(root, "", {"planner", "replicas", "assignments", "stats"});
  const json* replicas = in.Member(root, "", "replicas", true);
  const json* assignments = in.Member(root, "", "assignments", true);
  if (!in.ok() || in.Array(*replicas, "replicas") == nullptr || in.Array(*assignments, "assignments") == nullptr) {
    return in.status();
  }
  Plan plan;
  auto field = [&](const json& obj, const std::string& path, std::string_view key, int64_t max) {
    const json* v = in.Member(obj, path, key, true);
    return v ? in.Int(*v, Join(path, key), 0, max) : 0;
  };
  for (size_t i = 0; in.ok() && i < replicas->size(); ++i) {
    const std::string path = Index("replicas", i);
    if (in.Object((*replicas)[i], path) == nullptr) break;
    in.OnlyKeys((*replicas)[i], path, {"expert", "rank"});
    Replica r;
    r.expert = static_cast<int32_t>(field((*replicas)[i], path, "expert", kMaxInt32));
    r.rank = static_cast<int32_t>(field((*replicas)[i], path, "rank", kMaxInt32));
    plan.replicas.push_back(r);
  }
  for (size_t i = 0; in.ok() && i < assignments->size(); ++i) {
    const std::string path = Index("assignments", i);
    if (in.Object((*assignments)[i], path) == nullptr) break;
    in.OnlyKeys((*assignments)[i], path, {"source", "expert", "rank", "tokens"});
    Assignment a;
    a.source = static_cast<int32_t>(field((*assignments)[i], path, "source", kMaxInt32));
    a.expert = static_cast<int32_t>(field((*assignments)[i], path, "expert", kMaxInt32));
    a.rank = static_cast<int32_t>(field((*assignments)[i], path, "rank", kMaxInt32));
    a.tokens = field((*assignments)[i], path, "tokens", kMaxTokensPerEntry);
    plan.assignments.push_back(a);
  }
  if (!in.ok()) return in.status();
  return plan;
}

}  // namespace taot
