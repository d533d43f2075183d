// MaxWeightAssignment against SciPy 1.10's linear_sum_assignment(maximize=True): the optimum, and
// the same one of several optima (the answers below are SciPy's).
#include "taot/planner/solvers/assignment.h"

#include <gtest/gtest.h>

namespace taot {
namespace {

TEST(MaxWeightAssignmentTest, FindsTheMaximum) {
  EXPECT_EQ(MaxWeightAssignment(3, std::vector<double>{4, 1, 3, 2, 0, 5, 3, 2, 2}), (std::vector<int>{0, 2, 1}));
}

TEST(MaxWeightAssignmentTest, BreaksTiesAsSciPy) {
  EXPECT_EQ(MaxWeightAssignment(4, std::vector<double>(16, 0)), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(MaxWeightAssignment(3, std::vector<double>{1, 1, 0, 1, 1, 0, 0, 0, 1}), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(MaxWeightAssignment(4, std::vector<double>{0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 0, 0}),
            (std::vector<int>{2, 0, 3, 1}));
}

TEST(MaxWeightAssignmentTest, OneByOne) {
  EXPECT_EQ(MaxWeightAssignment(1, std::vector<double>{7}), (std::vector<int>{0}));
}

}  // namespace
}  // namespace taot
