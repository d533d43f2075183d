#include "taot/planner/case_json.h"

#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "json_fields.h"

namespace taot {
namespace {

using json_fields::Index;
using json_fields::Join;
using json_fields::Reader;
using nlohmann::json;

constexpr int64_t kMaxRanks = 1 << 16;
constexpr int64_t kMaxExperts = 1 << 20;
constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();

// Reads an R-row matrix; `cell` reads one entry. Returns false after an error.
template <typename Cell>
bool ReadRows(Reader& in, const json& value, const std::string& path, int64_t rows, int64_t cols,
              Cell cell) {
  const json* a = in.Array(value, path);
  if (a == nullptr) return false;
  if (static_cast<int64_t>(a->size()) != rows) {
    in.Fail(path, absl::StrCat("must have ", rows, " rows, got ", a->size()));
    return false;
  }
  for (size_t i = 0; i < a->size(); ++i) {
    const std::string row_path = Index(path, i);
    const json* row = in.Array((*a)[i], row_path);
    if (row == nullptr) return false;
    if (static_cast<int64_t>(row->size()) != cols) {
      in.Fail(row_path, absl::StrCat("must have ", cols, " entries, got ", row->size()));
      return false;
    }
    for (size_t j = 0; j < row->size(); ++j) {
      cell(i, j, (*row)[j], Index(row_path, j));
      if (!in.ok()) return false;
    }
  }
  return true;
}

absl::StatusOr<Topology> ReadTopology(Reader& in, const json& root) {
  const json* t = in.Member(root, "", "topology", true);
  if (t == nullptr || in.Object(*t, "topology") == nullptr) return in.status();
  in.OnlyKeys(*t, "topology",
              {"ranks", "ranks_per_node", "inter_node_cost", "node_of_rank", "cost_matrix"});
  const json* ranks_v = in.Member(*t, "topology", "ranks", true);
  const int64_t ranks = ranks_v ? in.Int(*ranks_v, "topology.ranks", 1, kMaxRanks) : 0;
  const json* per_node_v = in.Member(*t, "topology", "ranks_per_node", false);
  const json* nodes_v = in.Member(*t, "topology", "node_of_rank", false);
  const json* lambda_v = in.Member(*t, "topology", "inter_node_cost", false);
  const json* matrix_v = in.Member(*t, "topology", "cost_matrix", false);
  if (!in.ok()) return in.status();
  if (per_node_v && nodes_v) {
    in.Fail("topology", "give ranks_per_node or node_of_rank, not both");
  }
  if (lambda_v && matrix_v) {
    in.Fail("topology", "give inter_node_cost or cost_matrix, not both");
  }
  std::vector<int> node_of_rank(static_cast<size_t>(ranks));
  if (nodes_v) {
    const json* a = in.Array(*nodes_v, "topology.node_of_rank");
    if (a && static_cast<int64_t>(a->size()) != ranks) {
      in.Fail("topology.node_of_rank", absl::StrCat("must have ", ranks, " entries (one per rank), got ", a->size()));
    }
    for (size_t r = 0; in.ok() && r < static_cast<size_t>(ranks); ++r) {
      node_of_rank[r] =
          static_cast<int>(in.Int((*a)[r], Index("topology.node_of_rank", r), 0, kMaxInt32));
    }
  } else {
    const int64_t per_node =
        per_node_v ? in.Int(*per_node_v, "topology.ranks_per_node", 1, kMaxRanks)
                   : kDefaultRanksPerNode;
    for (int64_t r = 0; r < ranks; ++r) node_of_rank[r] = static_cast<int>(r / per_node);
  }
  if (!in.ok()) return in.status();
  if (matrix_v) {
    std::vector<double> cost(static_cast<size_t>(ranks * ranks));
    ReadRows(in, *matrix_v, "topology.cost_matrix", ranks, ranks,
             [&](size_t i, size_t j, const json& v, const std::string& path) {
               cost[i * ranks + j] = in.Number(v, path);
             });
    if (!in.ok()) return in.status();
    return Topology::FromMatrix(std::move(node_of_rank), std::move(cost));
  }
  const double lambda =
      lambda_v ? in.Number(*lambda_v, "topology.inter_node_cost") : kDefaultInterNodeCost;
  if (!in.ok()) return in.status();
  return Topology::FromNodes(std::move(node_of_rank), lambda);
}

void ReadResident(Reader& in, const json& value, PlanRequest& request) {
  const json* a = in.Array(value, "resident");
  for (size_t i = 0; a != nullptr && in.ok() && i < a->size(); ++i) {
    const std::string path = Index("resident", i);
    const json* item = in.Object((*a)[i], path);
    if (item == nullptr) return;
    in.OnlyKeys(*item, path, {"expert", "rank"});
    const json* e = in.Member(*item, path, "expert", true);
    const json* r = in.Member(*item, path, "rank", true);
    if (!in.ok()) return;
    Replica rep;
    rep.expert = static_cast<int32_t>(in.Int(*e, Join(path, "expert"), 0, kMaxInt32));
    rep.rank = static_cast<int32_t>(in.Int(*r, Join(path, "rank"), 0, kMaxInt32));
    request.resident.push_back(rep);
  }
}

}  // namespace

absl::StatusOr<PlanRequest> ParseCase(std::string_view text) {
  absl::StatusOr<json> parsed = json_fields::Parse(text);
  if (!parsed.ok()) return parsed.status();
  const json& root = *parsed;
  Reader in;
  if (in.Object(root, "") == nullptr) return in.status();
  in.OnlyKeys(root, "",
              {"topology", "experts", "slots_per_rank", "expert_bytes", "target_imbalance_pct",
               "load", "resident", "meta"});
  PlanRequest request;
  absl::StatusOr<Topology> topology = ReadTopology(in, root);
  if (!topology.ok()) return topology.status();
  request.topology = *std::move(topology);
  const int64_t R = request.topology.ranks();

  const json* experts = in.Member(root, "", "experts", true);
  const json* slots = in.Member(root, "", "slots_per_rank", true);
  const json* load = in.Member(root, "", "load", true);
  if (!in.ok()) return in.status();
  request.experts = static_cast<int>(in.Int(*experts, "experts", 1, kMaxExperts));
  request.slots_per_rank = static_cast<int>(in.Int(*slots, "slots_per_rank", 0, kMaxExperts));
  if (const json* b = in.Member(root, "", "expert_bytes", false)) {
    request.expert_bytes = in.Int(*b, "expert_bytes", 0, int64_t{1} << 50);
  }
  if (const json* t = in.Member(root, "", "target_imbalance_pct", false)) {
    request.target_imbalance_pct = in.Number(*t, "target_imbalance_pct");
  }
  if (const json* r = in.Member(root, "", "resident", false)) ReadResident(in, *r, request);
  if (const json* m = in.Member(root, "", "meta", false)) in.Object(*m, "meta");
  if (!in.ok()) return in.status();
  if (request.experts % R != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "experts: ", request.experts, " is not divisible by topology.ranks ", R,
        " (every rank hosts experts/ranks experts)"));
  }
  request.load = LoadMatrix(static_cast<int>(R), request.experts);
  ReadRows(in, *load, "load", R, request.experts,
           [&](size_t s, size_t e, const json& v, const std::string& path) {
             request.load.at(static_cast<int>(s), static_cast<int>(e)) =
                 in.Int(v, path, 0, kMaxTokensPerEntry);
           });
  if (!in.ok()) return in.status();
  if (absl::Status s = ValidateRequest(request); !s.ok()) return s;
  return request;
}

std::string CaseToJson(const PlanRequest& request, std::string_view meta_json) {
  const Topology& topo = request.topology;
  json topology;
  topology["ranks"] = topo.ranks();
  topology["node_of_rank"] = topo.node_of_rank();
  if (topo.has_matrix()) {
    json matrix = json::array();
    for (int a = 0; a < topo.ranks(); ++a) {
      json row = json::array();
      for (int b = 0; b < topo.ranks(); ++b) row.push_back(topo.cost(a, b));
      matrix.push_back(std::move(row));
    }
    topology["cost_matrix"] = std::move(matrix);
  } else {
    topology["inter_node_cost"] = topo.tree_costs()->inter;
  }
  std::ostringstream out;
  out << "{\n  \"topology\": " << topology.dump() << ",\n"
      << "  \"experts\": " << request.experts << ",\n"
      << "  \"slots_per_rank\": " << request.slots_per_rank << ",\n"
      << "  \"expert_bytes\": " << request.expert_bytes << ",\n";
  if (request.target_imbalance_pct) {
    out << "  \"target_imbalance_pct\": " << json(*request.target_imbalance_pct).dump() << ",\n";
  }
  if (!request.resident.empty()) {
    json resident = json::array();
    for (const Replica& r : request.resident) resident.push_back({{"expert", r.expert}, {"rank", r.rank}});
    out << "  \"resident\": " << resident.dump() << ",\n";
  }
  if (!meta_json.empty()) out << "  \"meta\": " << meta_json << ",\n";
  out << "  \"load\": [\n";
  for (int s = 0; s < request.load.sources(); ++s) {
    out << "    " << json(std::vector<int64_t>(request.load.row(s).begin(), request.load.row(s).end())).dump()
        << (s + 1 < request.load.sources() ? ",\n" : "\n");
  }
  out << "  ]\n}\n";
  return out.str();
}

}  // namespace taot
