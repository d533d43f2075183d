// Which plan a rank holds for a layer, apart from its content: every rank compares (version,
// hash) before any weight moves, and where the plan came from decides what the client counts and
// says. The daemon's round plans, its pushed replica sets and the client's answers all carry one.
#pragma once

#include <cstdint>
#include <string>

namespace taot {

enum class Provenance : uint8_t {
  // No replication: the daemon's fallback (rows missing at the round's deadline, or its planner
  // failed), or the ranks held different plans.
  kNoReplication,
  kDaemonRound,     // planned by the daemon from every rank's row of the round
  kPushedReplicas,  // the daemon's replicas pushed ahead of the layer, split locally over its tokens
  kLocalPlan,       // planned in-process by every rank on the all-gathered load
};

// The name users see (logs, the C ABI's taot_plan_source, the Python module's `source`):
// "none", "daemon", "placement", "local" (static strings, so the C ABI can hand them out).
constexpr const char* ProvenanceName(Provenance provenance) {
  switch (provenance) {
    case Provenance::kNoReplication:
      return "none";
    case Provenance::kDaemonRound:
      return "daemon";
    case Provenance::kPushedReplicas:
      return "placement";
    case Provenance::kLocalPlan:
      return "local";
  }
  return "?";
}

struct PlanIdentity {
  // The daemon's planner configuration that made the plan (it counts up when the planner is
  // swapped); 0 for a plan the ranks made themselves.
  uint64_t version = 0;
  uint64_t hash = 0;  // PlanHash of the canonical plan
  Provenance provenance = Provenance::kNoReplication;
  std::string reason;  // why no replication, or why the ranks planned locally; empty otherwise

  // Two ranks hold the same plan when these agree; provenance and reason are this rank's story.
  bool SamePlanAs(const PlanIdentity& other) const { return version == other.version && hash == other.hash; }
  // The wire's `fallback` flag.
  bool fallback() const { return provenance == Provenance::kNoReplication; }
};

}  // namespace taot
