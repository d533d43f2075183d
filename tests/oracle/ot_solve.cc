// Reads transport problems (JSON lines) and prints the cost each exact solver finds, for the
// independent check against POT (test_ot_vs_pot.py).
//   input:  {"supply": [..], "demand": [..], "cost": [[..]]}                  (general)
//           {"supply": [..], "demand": [..], "node_of_rank": [..], "inter": λ}  (two-level)
//   output: {"cost": x}
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "taot/planner/solvers/min_cost_transport.h"
#include "taot/planner/solvers/tree_transport.h"

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    const nlohmann::json in = nlohmann::json::parse(line);
    const auto supply = in.at("supply").get<std::vector<int64_t>>();
    const auto demand = in.at("demand").get<std::vector<int64_t>>();
    double cost = 0;
    if (in.contains("node_of_rank")) {
      const auto topology =
          taot::Topology::FromNodes(in.at("node_of_rank").get<std::vector<int>>(), in.at("inter").get<double>());
      if (!topology.ok()) {
        std::cerr << topology.status().message() << "\n";
        return 1;
      }
      cost = taot::SolveTreeTransport(*topology, *topology->tree_costs(), supply, demand).cost;
    } else {
      std::vector<double> flat;
      for (const auto& row : in.at("cost")) {
        for (double c : row.get<std::vector<double>>()) flat.push_back(c);
      }
      cost = taot::SolveMinCostTransport(supply, demand, flat).cost;
    }
    std::cout << nlohmann::json{{"cost", cost}}.dump() << "\n";
  }
  return 0;
}
