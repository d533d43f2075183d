// The CASE file: a PlanRequest as JSON (docs/formats.md).
//
//   {"topology": {"ranks": R, "ranks_per_node": G, "inter_node_cost": λ},
//    "experts": E, "slots_per_rank": K, "expert_bytes": B, "target_imbalance_pct": t,
//    "load": [[R rows of E integers]], "resident": [{"expert": e, "rank": r}], "meta": {...}}
//
// The topology may give "node_of_rank": [R labels] instead of ranks_per_node, and
// "cost_matrix": [[R x R]] instead of inter_node_cost. expert_bytes, target_imbalance_pct,
// resident and meta (free-form, ignored by planners) are optional. Unknown keys are errors, so
// a misspelt field never goes silently unused.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "taot/planner/plan_request.h"

namespace taot {

// Limits of every CASE and PLAN document (docs/formats.md, "Limits"): the largest CASE the size
// limits allow (2^24 load entries) fits in 256 MiB of text, and no document taot writes nests
// deeper than 4 levels.
inline constexpr size_t kMaxJsonBytes = size_t{256} << 20;
inline constexpr int kMaxJsonDepth = 64;

// Parses and validates (ValidateRequest) a CASE; errors name the field, e.g.
// "load[2][5]: must be an integer, got 1.5". Sizes are checked against the limits of
// plan_request.h and against what the document holds before anything of that size is
// allocated.
absl::StatusOr<PlanRequest> ParseCase(std::string_view json);

// Writes a CASE that ParseCase reads back to an equal request; `meta_json`, when not empty, is a
// JSON object stored under "meta". One load row per line.
std::string CaseToJson(const PlanRequest& request, std::string_view meta_json = "");

// The text of a CASE or PLAN file ("-" reads stdin), refused without reading further once it is
// longer than kMaxJsonBytes. Errors name the file (NotFound when it cannot be opened,
// InvalidArgument when it cannot be read or is too large).
absl::StatusOr<std::string> ReadJsonFile(const std::string& path);

}  // namespace taot
