// The rounds a stream message completes are planned together, in one batch (one launch for a
// planner on a device), with the plans each would get alone; a refused message counts no row.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "rounds_testing.h"
#include "taot/planner/run_planner.h"
#include "taot/server/plan_rounds.h"
#include "taot/sim/case_generator.h"

namespace taot::server {
namespace {

// taot, recording the size of every batch it is given.
class BatchRecorder final : public Planner {
 public:
  explicit BatchRecorder(std::shared_ptr<std::vector<size_t>> batches)
      : taot_(PlannerRegistry::BuiltIn().Create("taot").value()), batches_(std::move(batches)) {}
  std::string_view name() const override { return "batch-recorder"; }
  absl::StatusOr<Plan> MakePlan(const PlanRequest& request) override { return taot_->MakePlan(request); }
  std::vector<absl::StatusOr<Plan>> MakePlans(std::span<const PlanRequest* const> requests) override {
    batches_->push_back(requests.size());
    return Planner::MakePlans(requests);
  }

 private:
  std::unique_ptr<Planner> taot_;
  std::shared_ptr<std::vector<size_t>> batches_;
};

class PlanRoundsBatchTest : public ::testing::Test {
 protected:
  PlanRoundsBatchTest() : registry_(PlannerRegistry::BuiltIn()) {
    EXPECT_TRUE(registry_
                    .Register({"batch-recorder", "taot, recording its batches", {}},
                              [b = batches_](const PlannerParams&) -> absl::StatusOr<std::unique_ptr<Planner>> {
                                return std::make_unique<BatchRecorder>(b);
                              })
                    .ok());
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      sim::CaseOptions o;
      o.imbalance = 0.3 * static_cast<double>(seed);
      o.seed = seed;
      layers_.push_back(sim::GenerateCase(o)->request);
    }
  }

  std::unique_ptr<PlanRounds> Rounds(int64_t max_round_bytes = int64_t{1} << 30, bool place = false) {
    RoundsConfig config = ConfigFor(layers_[0], absl::Seconds(10));
    config.registry = &registry_;
    config.max_round_bytes = max_round_bytes;
    config.place = place;
    return PlanRounds::Create(config, "batch-recorder").value();
  }

  // Rank `rank`'s rows of layers 0, 1, 2 (layer i's load is layers_[i]'s).
  std::vector<PlanRounds::LayerRow> RowsOf(int rank) const {
    std::vector<PlanRounds::LayerRow> rows;
    for (int32_t i = 0; i < 3; ++i) rows.push_back({i, layers_[static_cast<size_t>(i)].load.row(rank)});
    return rows;
  }

  std::shared_ptr<std::vector<size_t>> batches_ = std::make_shared<std::vector<size_t>>();
  PlannerRegistry registry_;
  std::vector<PlanRequest> layers_;
};

TEST_F(PlanRoundsBatchTest, TheRoundsOneMessageCompletesArePlannedInOneBatch) {
  std::unique_ptr<PlanRounds> rounds = Rounds();
  std::vector<PlanRounds::Ticket> tickets;
  for (int rank = 0; rank < 16; ++rank) {
    absl::StatusOr<std::vector<PlanRounds::Ticket>> submitted = rounds->SubmitRows(4, rank, RowsOf(rank));
    ASSERT_TRUE(submitted.ok()) << submitted.status();
    ASSERT_EQ(submitted->size(), 3u);
    if (rank == 0) tickets = *std::move(submitted);
    if (rank < 15) {
      EXPECT_TRUE(batches_->empty());
    }
  }
  EXPECT_EQ(*batches_, std::vector<size_t>{3});
  for (size_t i = 0; i < 3; ++i) {
    absl::StatusOr<std::shared_ptr<const RoundPlan>> plan = rounds->Await(tickets[i], absl::Now());
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_EQ((*plan)->key, (RoundKey{4, static_cast<int32_t>(i)}));
    EXPECT_FALSE((*plan)->identity.fallback());
    EXPECT_EQ((*plan)->plan, RunPlanner(*PlannerRegistry::BuiltIn().Create("taot").value(), layers_[i])->plan);
    EXPECT_FALSE((*plan)->plan.replicas.empty());
  }
}

TEST_F(PlanRoundsBatchTest, TheNextStepsPlacementsOfABatchArePlacedInOneBatch) {
  std::unique_ptr<PlanRounds> rounds = Rounds(int64_t{1} << 30, /*place=*/true);
  for (int rank = 0; rank < 16; ++rank) ASSERT_TRUE(rounds->SubmitRows(4, rank, RowsOf(rank)).ok());
  EXPECT_EQ(*batches_, (std::vector<size_t>{3, 3}));
  std::vector<std::shared_ptr<const Prefetch>> got;
  rounds->prefetches().WhenPublished(0, [&](PrefetchFeed::Prefetches batch) { got = std::move(batch); });
  ASSERT_EQ(got.size(), 3u);
  for (int32_t i = 0; i < 3; ++i) EXPECT_EQ(got[static_cast<size_t>(i)]->key, (RoundKey{5, i}));
}

TEST_F(PlanRoundsBatchTest, ARefusedMessageCountsNoRow) {
  std::unique_ptr<PlanRounds> rounds = Rounds();
  auto refused = [&](std::vector<PlanRounds::LayerRow> rows, absl::StatusCode code, const char* says) {
    absl::StatusOr<std::vector<PlanRounds::Ticket>> submitted = rounds->SubmitRows(4, 2, rows);
    ASSERT_FALSE(submitted.ok());
    EXPECT_EQ(submitted.status().code(), code) << submitted.status();
    EXPECT_NE(submitted.status().message().find(says), std::string::npos) << submitted.status();
    for (int32_t layer = 0; layer < 3; ++layer) EXPECT_EQ(rounds->RowsIn({4, layer}), layer == 1 ? 1 : 0);
  };
  // Rank 2 has reported layer 1 alone before.
  ASSERT_TRUE(rounds->SubmitRows(4, 2, {&RowsOf(2)[1], 1}).ok());
  std::vector<int64_t> negative(layers_[2].load.row(2).begin(), layers_[2].load.row(2).end());
  negative[7] = -1;
  std::vector<PlanRounds::LayerRow> rows = RowsOf(2);
  rows[2].row = negative;
  refused(rows, absl::StatusCode::kInvalidArgument, "layers[2]: load[7]: must be in [0, ");
  rows = RowsOf(2);
  rows[2].layer = 0;
  refused(rows, absl::StatusCode::kInvalidArgument, "layers[2]: layer 0 appears twice (first at layers[0])");
  rows = RowsOf(2);
  rows[1].row = layers_[0].load.row(2);  // not what it reported for layer 1
  refused(rows, absl::StatusCode::kFailedPrecondition, "layers[1]: rank 2 already reported a different load");
  rows = RowsOf(2);
  rows[0].layer = -1;
  refused(rows, absl::StatusCode::kInvalidArgument, "layers[0]: layer: must be in [0, 1024), got -1");
  // Room for the rounds of one more layer, not of the two this message would open.
  const int64_t round_bytes = int64_t{16} * layers_[0].experts() * 8;
  rounds = Rounds(2 * round_bytes);
  ASSERT_TRUE(rounds->SubmitRows(4, 2, {&RowsOf(2)[1], 1}).ok());
  refused(RowsOf(2), absl::StatusCode::kResourceExhausted, "no room for 2 more");
  EXPECT_TRUE(batches_->empty());
}

}  // namespace
}  // namespace taot::server
