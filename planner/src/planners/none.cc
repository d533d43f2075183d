// Standard expert parallelism: no replication. The baseline of every speedup.
#include "planners/builtin.h"
#include "planners/params.h"

namespace taot::planners {
namespace {

class NonePlanner final : public Planner {
 public:
  std::string_view name() const override { return "none"; }
  absl::StatusOr<Plan> MakePlan(const PlanRequest&) override { return Plan{}; }
};

}  // namespace

PlannerOr MakeNone(const PlannerParams& params) {
  ParamReader reader("none", params);
  if (absl::Status s = reader.Finish(); !s.ok()) return s;
  return std::make_unique<NonePlanner>();
}

}  // namespace taot::planners
