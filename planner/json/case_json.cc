#include "taot/planner/case_json.h"

#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "taot/planner/json_fields.h"

namespace taot {
namespace {

using json_fields::Index;
using json_fields::Join;
using json_fields::Reader;
using nlohmann::json;

constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();
constexpr size_t kReadChunk = size_t{1} << 20;

// `value` when it is an array of `rows` arrays of `cols` entries each, else nullptr (and an
// error); checked before the matrix is allocated, so a declared size must be backed by data.
const json* MatrixOfShape(Reader& in, const json& value, const std::string& path, int64_t rows, int64_t cols) {
  const json* a = in.Array(value, path);
  if (a == nullptr) return nullptr;
  if (static_cast<int64_t>(a->size()) != rows) {
    in.Fail(path, absl::StrCat("must have ", rows, " rows, got ", a->size()));
    return nullptr;
  }
  for (size_t i = 0; i < a->size(); ++i) {
    const std::string row_path = Index(path, i);
    const json* row = in.Array((*a)[i], row_path);
    if (row == nullptr) return nullptr;
    if (static_cast<int64_t>(row->size()) != cols) {
      in.Fail(row_path, absl::StrCat("must have ", cols, " entries, got ", row->size()));
      return nullptr;
    }
  }
  return a;
}

// Reads every entry of a matrix MatrixOfShape accepted; `cell` reads one. Stops at an error.
template <typename Cell>
void ReadCells(Reader& in, const json& matrix, const std::string& path, Cell cell) {
  for (size_t i = 0; in.ok() && i < matrix.size(); ++i) {
    const std::string row_path = Index(path, i);
    for (size_t j = 0; in.ok() && j < matrix[i].size(); ++j) {
      cell(i, j, matrix[i][j], Index(row_path, j));
    }
  }
}

std::vector<int> ReadNodeOfRank(Reader& in, const json& value, int64_t ranks) {
  const json* a = in.Array(value, "topology.node_of_rank");
  if (a == nullptr) return {};
  if (static_cast<int64_t>(a->size()) != ranks) {
    in.Fail("topology.node_of_rank", absl::StrCat("must have ", ranks, " entries (one per rank), got ", a->size()));
    return {};
  }
  std::vector<int> node_of_rank(a->size());
  for (size_t r = 0; in.ok() && r < a->size(); ++r) {
    node_of_rank[r] = static_cast<int>(in.Int((*a)[r], Index("topology.node_of_rank", r), 0, kMaxInt32));
  }
  return node_of_rank;
}

// `t` is the topology object, `ranks` its checked rank count.
absl::StatusOr<Topology> ReadTopology(Reader& in, const json& t, int64_t ranks) {
  const json* per_node_v = in.Member(t, "topology", "ranks_per_node", false);
  const json* nodes_v = in.Member(t, "topology", "node_of_rank", false);
  const json* lambda_v = in.Member(t, "topology", "inter_node_cost", false);
  const json* matrix_v = in.Member(t, "topology", "cost_matrix", false);
  if (per_node_v && nodes_v) {
    in.Fail("topology", "give ranks_per_node or node_of_rank, not both");
  }
  if (lambda_v && matrix_v) {
    in.Fail("topology", "give inter_node_cost or cost_matrix, not both");
  }
  std::vector<int> node_of_rank;
  if (nodes_v) {
    node_of_rank = ReadNodeOfRank(in, *nodes_v, ranks);
  } else {
    const int64_t per_node =
        per_node_v ? in.Int(*per_node_v, "topology.ranks_per_node", 1, kMaxRanks) : kDefaultRanksPerNode;
    for (int64_t r = 0; in.ok() && r < ranks; ++r) {
      node_of_rank.push_back(static_cast<int>(r / per_node));
    }
  }
  if (!in.ok()) return in.status();
  if (matrix_v) {
    const json* m = MatrixOfShape(in, *matrix_v, "topology.cost_matrix", ranks, ranks);
    if (m == nullptr) return in.status();
    std::vector<double> cost(static_cast<size_t>(ranks * ranks));
    ReadCells(in, *m, "topology.cost_matrix", [&](size_t i, size_t j, const json& v, const std::string& path) {
      cost[i * static_cast<size_t>(ranks) + j] = in.Number(v, path);
    });
    if (!in.ok()) return in.status();
    return Topology::FromMatrix(std::move(node_of_rank), std::move(cost));
  }
  const double lambda = lambda_v ? in.Number(*lambda_v, "topology.inter_node_cost") : kDefaultInterNodeCost;
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

// The declared sizes, checked against the limits and against the load's shape before any R x R
// or R x E allocation; `ranks` receives the topology's rank count. Returns the load's JSON.
absl::StatusOr<const json*> ReadSizes(Reader& in, const json& root, const json& topology, Problem& problem,
                                      int64_t& ranks) {
  const json* ranks_v = in.Member(topology, "topology", "ranks", true);
  const json* experts_v = in.Member(root, "", "experts", true);
  const json* slots_v = in.Member(root, "", "slots_per_rank", true);
  const json* load_v = in.Member(root, "", "load", true);
  if (!in.ok()) return in.status();
  ranks = in.Int(*ranks_v, "topology.ranks", 1, kMaxRanks);
  problem.experts = static_cast<int>(in.Int(*experts_v, "experts", 1, kMaxExperts));
  // A rank cannot hold more guest replicas than there are experts.
  problem.slots_per_rank = static_cast<int>(in.Int(*slots_v, "slots_per_rank", 0, problem.experts));
  if (!in.ok()) return in.status();
  if (absl::Status s = CheckRequestSize(ranks, problem.experts); !s.ok()) return s;
  if (problem.experts % ranks != 0) {
    return absl::InvalidArgumentError(absl::StrCat("experts: ", problem.experts, " is not divisible by topology.ranks ",
                                                   ranks, " (every rank hosts experts/ranks experts)"));
  }
  const json* load = MatrixOfShape(in, *load_v, "load", ranks, problem.experts);
  if (load == nullptr) return in.status();
  return load;
}

}  // namespace

absl::StatusOr<PlanRequest> ParseCase(std::string_view text) {
  absl::StatusOr<json> parsed = json_fields::Parse(text);
  if (!parsed.ok()) return parsed.status();
  const json& root = *parsed;
  Reader in;
  if (in.Object(root, "") == nullptr) return in.status();
  in.OnlyKeys(
      root, "",
      {"topology", "experts", "slots_per_rank", "expert_bytes", "target_imbalance_pct", "load", "resident", "meta"});
  const json* t = in.Member(root, "", "topology", true);
  if (t == nullptr || in.Object(*t, "topology") == nullptr) return in.status();
  in.OnlyKeys(*t, "topology", {"ranks", "ranks_per_node", "inter_node_cost", "node_of_rank", "cost_matrix"});
  if (!in.ok()) return in.status();
  Problem problem;
  int64_t ranks = 0;
  absl::StatusOr<const json*> load = ReadSizes(in, root, *t, problem, ranks);
  if (!load.ok()) return load.status();
  absl::StatusOr<Topology> topology = ReadTopology(in, *t, ranks);
  if (!topology.ok()) return topology.status();
  problem.topology = *std::move(topology);
  if (const json* b = in.Member(root, "", "expert_bytes", false)) {
    problem.expert_bytes = in.Int(*b, "expert_bytes", 0, int64_t{1} << 50);
  }
  if (!in.ok()) return in.status();
  absl::StatusOr<std::shared_ptr<const Problem>> shared = ShareProblem(std::move(problem));
  if (!shared.ok()) return shared.status();
  PlanRequest request = EmptyRequest(*std::move(shared));
  if (const json* v = in.Member(root, "", "target_imbalance_pct", false)) {
    request.target_imbalance_pct = in.Number(*v, "target_imbalance_pct");
  }
  if (const json* r = in.Member(root, "", "resident", false)) ReadResident(in, *r, request);
  if (const json* m = in.Member(root, "", "meta", false)) in.Object(*m, "meta");
  if (!in.ok()) return in.status();
  ReadCells(in, **load, "load", [&](size_t s, size_t e, const json& v, const std::string& path) {
    request.load.at(static_cast<int>(s), static_cast<int>(e)) = in.Int(v, path, 0, kMaxTokensPerEntry);
  });
  if (!in.ok()) return in.status();
  if (absl::Status s = ValidateRequest(request); !s.ok()) return s;
  return request;
}

std::string CaseToJson(const PlanRequest& request, std::string_view meta_json) {
  const Topology& topo = request.topology();
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
      << "  \"experts\": " << request.experts() << ",\n"
      << "  \"slots_per_rank\": " << request.slots_per_rank() << ",\n"
      << "  \"expert_bytes\": " << request.expert_bytes() << ",\n";
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

absl::StatusOr<std::string> ReadJsonFile(const std::string& path) {
  const bool is_stdin = path == "-";
  const std::string name = is_stdin ? "stdin" : path;
  std::ifstream file;
  if (!is_stdin) {
    file.open(path, std::ios::binary);
    if (!file) return absl::NotFoundError(absl::StrCat(path, ": cannot open for reading"));
  }
  std::istream& in = is_stdin ? std::cin : file;
  std::string text;
  while (in && text.size() <= kMaxJsonBytes) {
    const size_t old_size = text.size();
    text.resize(old_size + kReadChunk);
    in.read(text.data() + old_size, static_cast<std::streamsize>(kReadChunk));
    text.resize(old_size + static_cast<size_t>(in.gcount()));
  }
  if (text.size() > kMaxJsonBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": more than the limit of ", kMaxJsonBytes, " bytes (256 MiB) of JSON"));
  }
  if (in.bad()) return absl::InvalidArgumentError(absl::StrCat(name, ": cannot read (a directory?)"));
  return text;
}

}  // namespace taot
