#include "taot/client/replica_moves.h"

#include <gtest/gtest.h>

namespace taot::client {
namespace {

TEST(ReplicaMovesTest, SlotsAreNumberedPerGuestInExpertOrder) {
  Plan plan;
  plan.replicas = {{7, 1}, {4, 1}, {5, 0}, {2, 3}};  // any order; 4 ranks, 2 experts each
  EXPECT_EQ(GuestSlots(plan, 1), (std::vector<int>{4, 7}));
  EXPECT_EQ(GuestSlots(plan, 0), (std::vector<int>{5}));
  EXPECT_TRUE(GuestSlots(plan, 2).empty());
  const std::vector<ReplicaTransfer> t = Transfers(plan, 2);
  // (expert, home, guest, slot), by expert.
  const std::vector<ReplicaTransfer> want = {{2, 1, 3, 0}, {4, 2, 1, 0}, {5, 2, 0, 0}, {7, 3, 1, 1}};
  EXPECT_EQ(t, want);
}

}  // namespace
}  // namespace taot::client
