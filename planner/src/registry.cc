#include "taot/planner/registry.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "planners/builtin_list.h"

namespace taot {

absl::Status PlannerRegistry::Unknown(std::string_view name) const {
  return absl::NotFoundError(
      absl::StrCat("unknown planner '", std::string(name), "' (known: ", absl::StrJoin(names(), ", "), ")"));
}

const PlannerRegistry& PlannerRegistry::BuiltIn() {
  static const PlannerRegistry* registry = [] {
    auto* built_in = new PlannerRegistry;
    planners::AddBuiltInPlanners(*built_in);
    return built_in;
  }();
  return *registry;
}

absl::Status PlannerRegistry::Register(PlannerInfo info, Factory factory) {
  for (const Entry& e : entries_) {
    if (e.info.name == info.name) {
      return absl::AlreadyExistsError(absl::StrCat("planner '", info.name, "' is already registered"));
    }
  }
  entries_.push_back({std::move(info), std::move(factory)});
  return absl::OkStatus();
}

absl::Status PlannerRegistry::Rebind(std::string_view name, Factory factory) {
  for (Entry& e : entries_) {
    if (e.info.name == name) {
      e.factory = std::move(factory);
      return absl::OkStatus();
    }
  }
  return Unknown(name);
}

std::vector<std::string> PlannerRegistry::names() const {
  std::vector<std::string> out;
  for (const Entry& e : entries_) out.push_back(e.info.name);
  return out;
}

absl::StatusOr<std::unique_ptr<Planner>> PlannerRegistry::Create(std::string_view name,
                                                                 const PlannerParams& params) const {
  for (const Entry& e : entries_) {
    if (e.info.name == name) return e.factory(params);
  }
  return Unknown(name);
}

absl::StatusOr<std::unique_ptr<Planner>> PlannerRegistry::CreateRunnable(std::string_view name,
                                                                         const PlannerParams& params) const {
  absl::StatusOr<std::unique_ptr<Planner>> planner = Create(name, params);
  if (planner.ok() && (*planner)->comparison_only()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "planner '", std::string(name),
        "' is comparison only: its plans put more than slots_per_rank replicas on a rank, which no rank can "
        "hold; use it with taot plan/compare/score or taot-sim, not to run a job"));
  }
  return planner;
}

absl::StatusOr<PlannerInfo> PlannerRegistry::Describe(std::string_view name) const {
  for (const Entry& e : entries_) {
    if (e.info.name == name) return e.info;
  }
  return Unknown(name);
}

}  // namespace taot
