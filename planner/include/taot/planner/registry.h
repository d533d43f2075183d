// Built-in planners by name, with their parameters.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "taot/planner/planner.h"
#include "taot/planner/planner_params.h"

namespace taot {

struct PlannerInfo {
  std::string name;
  std::string summary;
  // "key: meaning (default)" for each accepted parameter.
  std::vector<std::string> params;
};

class PlannerRegistry {
 public:
  using Factory = std::function<absl::StatusOr<std::unique_ptr<Planner>>(const PlannerParams&)>;

  // The planners shipped with taot, in a fixed order: "taot" (the default) first, then the
  // peers, then "none".
  static const PlannerRegistry& BuiltIn();

  // Adds a planner; fails if the name is taken.
  absl::Status Register(PlannerInfo info, Factory factory);
  // Makes planner `name` another way, the same planner (its plans, name and parameters stay):
  // taot-block on a device instead of the CPU. NotFound for an unknown name.
  absl::Status Rebind(std::string_view name, Factory factory);

  std::vector<std::string> names() const;
  // NotFound names the unknown planner and lists the known ones.
  absl::StatusOr<std::unique_ptr<Planner>> Create(std::string_view name, const PlannerParams& params = {}) const;
  // Create for where plans are carried out (the daemon, the client): a comparison-only planner
  // (Planner::comparison_only) is refused with FailedPrecondition, naming it and why.
  absl::StatusOr<std::unique_ptr<Planner>> CreateRunnable(std::string_view name,
                                                          const PlannerParams& params = {}) const;
  absl::StatusOr<PlannerInfo> Describe(std::string_view name) const;

 private:
  struct Entry {
    PlannerInfo info;
    Factory factory;
  };
  // NotFound naming `name` and the known planners.
  absl::Status Unknown(std::string_view name) const;

  std::vector<Entry> entries_;
};

inline constexpr std::string_view kDefaultPlanner = "taot";

}  // namespace taot
