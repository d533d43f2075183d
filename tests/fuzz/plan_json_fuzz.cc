// The PLAN reader (ParsePlan) on any bytes: `taot score` and `taot-sim` read plans from files.
// Whatever it accepts must write back to a PLAN that reads as the same replicas and assignments.
#include <cstddef>
#include <cstdint>

#include "fuzz_support.h"
#include "taot/planner/plan_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using taot::fuzz::Require;
  const absl::StatusOr<taot::Plan> plan = taot::ParsePlan(taot::fuzz::AsText(data, size));
  if (!plan.ok()) {
    Require(!plan.status().message().empty(), "a refused PLAN gets a message");
    return 0;
  }
  const absl::StatusOr<taot::Plan> again = taot::ParsePlan(taot::PlanToJson("fuzz", *plan, taot::Scorecard{}));
  Require(again.ok(), "PlanToJson writes a PLAN that ParsePlan reads");
  Require(again->replicas == plan->replicas && again->assignments == plan->assignments,
          "a PLAN reads back to the same replicas and assignments");
  return 0;
}
