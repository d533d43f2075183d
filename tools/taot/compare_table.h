// The scorecard table of `taot compare` and `taot demo`.
#pragma once

#include <string>
#include <vector>

#include "taot/planner/plan_request.h"
#include "taot/planner/scorecard.h"

namespace taot::cli {

struct CompareRow {
  std::string planner;
  Scorecard score;
};

std::string FormatCompareTable(const std::vector<CompareRow>& rows);
// {"planner": NAME, "stats": {...}} per line, the stats as in a PLAN file.
std::string FormatCompareJsonLines(const std::vector<CompareRow>& rows);

}  // namespace taot::cli
