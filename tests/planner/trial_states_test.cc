#include "planners/trial_states.h"

#include <gtest/gtest.h>

#include <memory>
#include <random>

#include "placement_testing.h"

namespace taot::planners {
namespace {

using testing::BoundState;
using testing::RandomChange;
using testing::RandomState;
using testing::SameState;

class TrialStatesTest : public ::testing::TestWithParam<TrialStates::Way> {};

// A node's trials, each a few random changes from the node's start, kept or dropped at random:
// each must start from the exact start and leave the exact best trial, whichever way is used.
TEST_P(TrialStatesTest, EachTrialStartsAtTheStartAndTheBestStays) {
  std::mt19937_64 rng(5);
  TrialStates trials;
  for (uint64_t seed = 0; seed < 80; ++seed) {
    std::unique_ptr<BoundState> b = RandomState(seed);
    PlacementState& s = b->state;
    for (int i = 0; i < 4; ++i) RandomChange(s, rng);  // before the node
    if (seed % 3 == 0) s.DeferNode(static_cast<int>(seed % 2));
    s.ClearLog();
    s.set_logging(true);
    BoundState start(b->request, 0), best(b->request, 0);
    start.state.Restore(s.values());
    const int first_changes = static_cast<int>(rng() % 8);
    for (int i = 0; i < first_changes; ++i) RandomChange(s, rng);
    best.state.Restore(s.values());
    trials.Begin(s, 0, GetParam());
    for (int trial = 1; trial <= 4; ++trial) {
      trials.Next();
      ASSERT_TRUE(SameState(s, start.state)) << "seed " << seed << ", trial " << trial;
      const int changes = static_cast<int>(rng() % 10);
      for (int i = 0; i < changes; ++i) RandomChange(s, rng);
      const bool better = rng() % 2 == 0;
      if (better) best.state.Restore(s.values());
      trials.End(better);
      ASSERT_TRUE(SameState(s, best.state)) << "seed " << seed << ", trial " << trial;
    }
    s.set_logging(false);
    s.EndDeferral();
  }
}

INSTANTIATE_TEST_SUITE_P(Ways, TrialStatesTest,
                         ::testing::Values(TrialStates::Way::kLog, TrialStates::Way::kCopies,
                                           TrialStates::Way::kByRule),
                         [](const ::testing::TestParamInfo<TrialStates::Way>& way) {
                           switch (way.param) {
                             case TrialStates::Way::kLog:
                               return "ByLog";
                             case TrialStates::Way::kCopies:
                               return "ByCopies";
                             default:
                               return "ByRule";
                           }
                         });

}  // namespace
}  // namespace taot::planners
