#include "taot/server/plugin_planner.h"

#include <dlfcn.h>

#include <cctype>
#include <cmath>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "taot/planner/run_planner.h"
#include "taot/planner_plugin.h"
#include "taot/server/log.h"

namespace taot::server {
namespace {

constexpr int32_t kErrorSize = 512;

void PluginLog(taot_log_level_t level, const char* message) {
  const LogLevel ours = level == TAOT_LOG_DEBUG     ? LogLevel::kDebug
                        : level == TAOT_LOG_WARNING ? LogLevel::kWarning
                        : level == TAOT_LOG_ERROR   ? LogLevel::kError
                                                    : LogLevel::kInfo;
  Log(ours, message != nullptr ? message : "", {{"source", "plugin"}});
}

// The library stays loaded while any planner made from it lives.
using Library = std::shared_ptr<void>;

class PluginPlanner final : public Planner {
 public:
  PluginPlanner(Library library, const taot_planner_plugin_v1* api, void* context)
      : library_(std::move(library)), api_(api), context_(context) {}
  ~PluginPlanner() override { api_->destroy(context_); }

  std::string_view name() const override { return api_->name; }

  absl::StatusOr<Plan> MakePlan(const PlanRequest& request) override {
    const int R = request.ranks();
    std::vector<double> cost(static_cast<size_t>(R) * R);
    for (int a = 0; a < R; ++a) {
      for (int b = 0; b < R; ++b) cost[static_cast<size_t>(a) * R + b] = request.topology.cost(a, b);
    }
    std::vector<int32_t> resident;
    for (const Replica& r : request.resident) resident.insert(resident.end(), {r.expert, r.rank});
    const std::vector<int>& nodes = request.topology.node_of_rank();
    const std::vector<int32_t> node_of_rank(nodes.begin(), nodes.end());
    const taot_plan_request_v1 q{R,
                                 request.experts,
                                 request.slots_per_rank,
                                 request.expert_bytes,
                                 node_of_rank.data(),
                                 cost.data(),
                                 request.load.data().data(),
                                 resident.data(),
                                 static_cast<int32_t>(request.resident.size()),
                                 request.target_imbalance_pct.value_or(-1.0)};
    const int32_t replica_capacity = R * request.slots_per_rank;
    replicas_.resize(static_cast<size_t>(replica_capacity));
    assignments_.resize(static_cast<size_t>(R) * replica_capacity);
    taot_plan_v1 out{replicas_.data(), replica_capacity, 0, assignments_.data(),
                     static_cast<int32_t>(assignments_.size()), 0};
    char error[kErrorSize] = "";
    if (api_->make_plan(context_, &q, &out, error, kErrorSize) != TAOT_PLUGIN_OK) {
      return absl::InternalError(absl::StrCat("plugin ", api_->name, ": make_plan failed: ", error));
    }
    if (out.replica_count < 0 || out.replica_count > replica_capacity || out.assignment_count < 0 ||
        out.assignment_count > out.assignment_capacity) {
      return absl::InternalError(absl::StrCat("plugin ", api_->name, ": counts outside the buffers (",
                                              out.replica_count, " replicas, ", out.assignment_count, " assignments)"));
    }
    Plan plan;
    for (int32_t i = 0; i < out.replica_count; ++i) plan.replicas.push_back({replicas_[i].expert, replicas_[i].rank});
    for (int32_t i = 0; i < out.assignment_count; ++i) {
      const taot_assignment_v1& a = assignments_[i];
      plan.assignments.push_back({a.source, a.expert, a.rank, a.tokens});
    }
    return plan;
  }

 private:
  Library library_;
  const taot_planner_plugin_v1* api_;
  void* context_;
  std::vector<taot_replica_v1> replicas_;
  std::vector<taot_assignment_v1> assignments_;
};

absl::StatusOr<std::unique_ptr<Planner>> Create(const Library& library, const taot_planner_plugin_v1* api,
                                                const PlannerParams& params) {
  std::vector<const char*> keys, values;
  for (const auto& [k, v] : params) {
    keys.push_back(k.c_str());
    values.push_back(v.c_str());
  }
  void* context = nullptr;
  char error[kErrorSize] = "";
  if (api->init(&context, keys.data(), values.data(), static_cast<int32_t>(keys.size()), PluginLog, error,
                kErrorSize) != TAOT_PLUGIN_OK) {
    return absl::InvalidArgumentError(absl::StrCat("planner ", api->name, ": ", error));
  }
  return std::make_unique<PluginPlanner>(library, api, context);
}

bool ValidName(const char* name) {
  if (name == nullptr || *name == '\0') return false;
  for (const char* c = name; *c != '\0'; ++c) {
    if (!(std::isalnum(static_cast<unsigned char>(*c)) || *c == '-' || *c == '_')) return false;
  }
  return true;
}

// A small skewed request on two nodes: a plugin's plan for it must be valid.
PlanRequest Probe() {
  PlanRequest r;
  r.topology = *Topology::Uniform(4, 2);
  r.experts = 8;
  r.slots_per_rank = 2;
  r.load = LoadMatrix(4, 8);
  for (int s = 0; s < 4; ++s) {
    for (int e = 0; e < 8; ++e) r.load.at(s, e) = e == 0 ? 400 : 10 + s + e;
  }
  return r;
}

}  // namespace

absl::StatusOr<std::string> RegisterPlugin(const std::string& path, PlannerRegistry& registry) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return absl::InvalidArgumentError(absl::StrCat("plugin ", path, ": cannot load: ", dlerror()));
  Library library(handle, [](void* h) { dlclose(h); });
  const auto* api = static_cast<const taot_planner_plugin_v1*>(dlsym(handle, TAOT_PLANNER_PLUGIN_V1_SYMBOL));
  if (api == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("plugin ", path, ": no symbol ", TAOT_PLANNER_PLUGIN_V1_SYMBOL,
                                                   " (not a taot planner plugin, version 1)"));
  }
  if (!ValidName(api->name) || api->init == nullptr || api->make_plan == nullptr || api->destroy == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("plugin ", path, ": ", TAOT_PLANNER_PLUGIN_V1_SYMBOL,
                                                   " needs a name (letters, digits, '-', '_') and all three functions"));
  }
  absl::StatusOr<std::unique_ptr<Planner>> probe_planner = Create(library, api, {});
  if (!probe_planner.ok()) return absl::InvalidArgumentError(absl::StrCat("plugin ", path, ": ", probe_planner.status().message()));
  if (absl::StatusOr<ScoredPlan> probe = RunPlanner(**probe_planner, Probe()); !probe.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("plugin ", path, ": its plan for a probe request is refused: ", probe.status().message()));
  }
  const std::string name = api->name;
  absl::Status registered = registry.Register(
      {name, absl::StrCat("plugin ", path), {"parameters: as the plugin documents them"}},
      [library, api](const PlannerParams& params) { return Create(library, api, params); });
  if (!registered.ok()) return absl::InvalidArgumentError(absl::StrCat("plugin ", path, ": ", registered.message()));
  return name;
}

}  // namespace taot::server
