#include "compare_table.h"

#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "taot/planner/plan_json.h"

namespace taot::cli {
namespace {

std::string Bytes(int64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? absl::StrCat(b, " B") : absl::StrFormat("%.1f %s", v, units[u]);
}

}  // namespace

std::string FormatCompareTable(const std::vector<CompareRow>& rows) {
  std::string out =
      absl::StrFormat("%-11s %9s %9s %6s %6s %6s %8s %11s %11s %12s %10s\n", "planner", "imbal.%", "after.%", "target",
                      "intra", "inter", "w.cost", "bytes.intra", "bytes.inter", "tok.internode", "time.us");
  for (const CompareRow& r : rows) {
    const Scorecard& s = r.score;
    out += absl::StrFormat("%-11s %9.2f %9.2f %6s %6d %6d %8.1f %11s %11s %12d %10.1f\n", r.planner,
                           s.imbalance_before_pct, s.imbalance_after_pct, s.target_met ? "met" : "missed",
                           s.intra_node_transfers, s.inter_node_transfers, s.weighted_cost,
                           Bytes(s.bytes_moved_intra_node), Bytes(s.bytes_moved_inter_node), s.tokens_inter_node,
                           s.plan_time_us);
  }
  out += absl::StrFormat(
      "\ntarget: %.3g%% residual imbalance (the busiest rank within %.3g%% of the mean); "
      "w.cost: intra + λ x inter transfers; tok.internode: tokens dispatched across nodes\n",
      rows.empty() ? 0.0 : rows.front().score.target_imbalance_pct,
      rows.empty() ? 0.0 : rows.front().score.target_imbalance_pct);
  return out;
}

std::string FormatCompareJsonLines(const std::vector<CompareRow>& rows) {
  std::string out;
  for (const CompareRow& r : rows) {
    absl::StrAppend(&out, "{\"planner\": \"", r.planner, "\", \"stats\": ", ScorecardToJson(r.score), "}\n");
  }
  return out;
}

}  // namespace taot::cli
