// The CASE reader (ParseCase) on any bytes: `taot plan`, `taot-sim --case` and the daemon's
// PlanCase all hand it text from outside. Whatever it accepts must be a valid request that
// writes back to a CASE it reads the same way.
#include <cstddef>
#include <cstdint>

#include "fuzz_support.h"
#include "taot/planner/case_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using taot::fuzz::Require;
  const absl::StatusOr<taot::PlanRequest> request = taot::ParseCase(taot::fuzz::AsText(data, size));
  if (!request.ok()) {
    Require(!request.status().message().empty(), "a refused CASE gets a message");
    return 0;
  }
  Require(taot::ValidateRequest(*request).ok(), "an accepted CASE is a valid request");
  const std::string written = taot::CaseToJson(*request);
  const absl::StatusOr<taot::PlanRequest> again = taot::ParseCase(written);
  Require(again.ok(), "CaseToJson writes a CASE that ParseCase reads");
  Require(taot::CaseToJson(*again) == written, "a CASE reads back to the same request");
  return 0;
}
