// How CoverNode's trials (taot_placement.h) each start from the node's start and give way to the
// best one: a node tries up to five covers from one state and keeps the cheapest.
#pragma once

#include <cstddef>
#include <vector>

#include "planners/placement_state.h"

namespace taot::planners {

// After the first trial (made with the state's log on, from log mark `start`), each further
// trial is bracketed by Next() and End(better); the state then holds the best trial so far.
//
// Two ways, chosen by what the first trial changed, with the same states either way:
// - through the log: Next() undoes the best trial change by change, keeping the changes, and
//   End(false) undoes the trial and redoes the best. Cheap for a few changes.
// - through copies: Next() copies the best trial aside (once) and the node's start in; End(false)
//   swaps the best back. A burst's trial makes tens of changes, each re-sorting a bin when undone
//   or redone, and its copies cost less than that. A copy costs O(ranks + experts), so the copies
//   are taken only where the first trial made more than kCopyAfter changes per 1,000 of those.
class TrialStates {
 public:
  // Measured (tests/bench/icount.sh on zipf-like and burst cases at EP64-EP1024; any value from
  // 10 to 30 did as well): docs/performance.md.
  static constexpr size_t kCopyAfter = 20;
  enum class Way { kByRule, kLog, kCopies };

  // After the first trial; `start` is the log's mark at the node's start. Tests name the way.
  void Begin(PlacementState& state, size_t start, Way way = Way::kByRule);
  // Sets the state to the node's start, the best trial kept aside.
  void Next();
  // After a trial: whether it beats the best, which the state then holds; if not, the best is put
  // back.
  void End(bool better);

 private:
  PlacementState* state_ = nullptr;
  size_t start_ = 0;
  bool by_copies_ = false;
  bool have_start_ = false;
  bool best_aside_ = false;                         // best_trial_ holds the best (else the state does)
  std::vector<PlacementState::Change> redo_;        // by the log: the best trial's changes
  PlacementState::Values node_start_, best_trial_;  // by copies
};

}  // namespace taot::planners
