// The peers' own code's plans on the public cases (tests/data/peers, written by
// scripts/import_peer_fixtures.py): the ground truth the ports in planner/src/planners are
// checked against. Scores come from an independent scorer, not ours.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "taot/planner/plan.h"
#include "taot/planner/plan_request.h"

namespace taot::testing {

// What one peer's code planned for one case, and how the independent scorer scored it.
struct PeerPlan {
  std::vector<Replica> replicas;  // sorted by (expert, rank)
  double imbalance_after_pct = 0;
  double weighted_cost = 0;
  int intra_node_transfers = 0;
  int inter_node_transfers = 0;
  int max_replicas_of_one_expert = 0;
  // The peer put more than K replicas on some rank (LLEP and EPLB ignore K; our ports keep it).
  bool k_exceeded = false;
};

// The case names, sorted ("corner_ep12_k3", ..., "ep64_imb90_s12").
std::vector<std::string> PeerCaseNames();

// The CASE file `name` as a request; fails the calling test (and returns an empty request) when
// it cannot be read.
PlanRequest LoadPeerCase(const std::string& name);

// Every case's plan by peer "taot", "echo", "llep", "eplb_g8" or "eplb_gR" (EPLB with
// num_groups = 8 or R, converted to fixed homes).
std::map<std::string, PeerPlan> LoadPeerPlans(const std::string& peer);

// The exact optimum on one public case at one target (optima.json, written by
// tests/bench/fixture_optima.py from milp_reference.py --full).
struct Optimum {
  std::string case_name;
  double target_pct = 0;
  double weighted_cost = 0;
  bool proven = false;  // HiGHS proved it optimal (else the best it found within its limit)
};

// Every optimum of optima.json, in its order.
std::vector<Optimum> LoadOptima();

}  // namespace taot::testing
