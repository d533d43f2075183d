#include "planners/trial_states.h"

namespace taot::planners {

void TrialStates::Begin(PlacementState& state, size_t start, Way way) {
  state_ = &state;
  start_ = start;
  const size_t changes = state.log().size() - start;
  const size_t size = static_cast<size_t>(state.ranks()) + state.experts();
  by_copies_ = way == Way::kByRule ? changes * 1000 > kCopyAfter * size : way == Way::kCopies;
  have_start_ = false;
  best_aside_ = false;
}

void TrialStates::Next() {
  PlacementState& s = *state_;
  if (!by_copies_) {
    redo_.clear();
    s.Rollback(start_, &redo_);
    return;
  }
  if (!have_start_) {
    // These two are swapped with the state's own values: as roomy as its.
    s.ReserveLists(best_trial_);
    s.ReserveLists(node_start_);
    best_trial_ = s.values();
    s.Rollback(start_, nullptr);
    s.set_logging(false);  // no trial is undone through the log from here on
    node_start_ = s.values();
    have_start_ = true;
  } else {
    if (!best_aside_) s.SwapValues(best_trial_);
    s.Restore(node_start_);
  }
  best_aside_ = true;
}

void TrialStates::End(bool better) {
  PlacementState& s = *state_;
  if (!by_copies_) {
    if (!better) {
      s.Rollback(start_, nullptr);
      s.Redo(redo_);
    }
    return;
  }
  if (!better) s.SwapValues(best_trial_);
  best_aside_ = false;
}

}  // namespace taot::planners
