#include "peer_fixtures.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "taot/planner/case_json.h"

namespace taot::testing {
namespace {

const std::filesystem::path kPeersDir = std::filesystem::path(TAOT_TEST_DATA_DIR) / "peers";

std::string ReadAll(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::vector<std::string> PeerCaseNames() {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(kPeersDir / "cases")) {
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

PlanRequest LoadPeerCase(const std::string& name) {
  const auto request = ParseCase(ReadAll(kPeersDir / "cases" / (name + ".json")));
  if (!request.ok()) {
    ADD_FAILURE() << "peer case " << name << ": " << request.status();
    return PlanRequest{};
  }
  return *request;
}

std::map<std::string, PeerPlan> LoadPeerPlans(const std::string& peer) {
  const nlohmann::json table = nlohmann::json::parse(ReadAll(kPeersDir / (peer + ".json")));
  std::map<std::string, PeerPlan> plans;
  for (const auto& [name, row] : table.items()) {
    PeerPlan& plan = plans[name];
    for (const auto& pair : row.at("replicas")) plan.replicas.push_back({pair.at(0), pair.at(1)});
    std::sort(plan.replicas.begin(), plan.replicas.end());
    plan.imbalance_after_pct = row.at("imbalance_after_pct");
    plan.weighted_cost = row.at("weighted_cost");
    plan.intra_node_transfers = row.at("intra_node_transfers");
    plan.inter_node_transfers = row.at("inter_node_transfers");
    plan.max_replicas_of_one_expert = row.at("max_replicas_of_one_expert");
    plan.k_exceeded = row.at("k_exceeded");
  }
  return plans;
}

std::vector<Optimum> LoadOptima() {
  std::vector<Optimum> optima;
  for (const nlohmann::json& row : nlohmann::json::parse(ReadAll(kPeersDir / "optima.json"))) {
    optima.push_back({row.at("case").get<std::string>(), row.at("target_pct").get<double>(),
                      row.at("weighted_cost").get<double>(), row.at("status").get<std::string>() == "optimal"});
  }
  return optima;
}

}  // namespace taot::testing
