// Plans one CASE file N times with one planner, for instruction counts that do not depend on
// the machine's load:
//   valgrind --tool=callgrind build/tests/bench/plan_repeat CASE.json 21 taot
// (instructions per plan = (count at N=21 - count at N=1) / 20; tests/bench/icount.sh does it).
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "taot/planner/case_json.h"
#include "taot/planner/registry.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: plan_repeat CASE.json N [PLANNER]\n";
    return 2;
  }
  std::ifstream in(argv[1]);
  std::stringstream text;
  text << in.rdbuf();
  auto request = taot::ParseCase(text.str());
  if (!request.ok()) {
    std::cerr << "plan_repeat: " << request.status().message() << "\n";
    return 1;
  }
  auto planner = taot::PlannerRegistry::BuiltIn().Create(argc > 3 ? argv[3] : "taot");
  if (!planner.ok()) {
    std::cerr << "plan_repeat: " << planner.status().message() << "\n";
    return 1;
  }
  const int n = std::atoi(argv[2]);
  size_t assignments = 0;
  for (int i = 0; i < n; ++i) assignments += (*planner)->MakePlan(*request)->assignments.size();
  std::cout << assignments << "\n";
  return 0;
}
