#include "taot/planner/plan_request.h"

#include <gtest/gtest.h>

#include <limits>
#include <optional>
#include <random>
#include <vector>

#include "test_requests.h"

namespace taot {
namespace {

using testing::MakeRequest;

TEST(ValidateRequestTest, AcceptsAWellFormedRequest) {
  const PlanRequest r = MakeRequest(4, 8, 2, {{1, 2, 3, 4, 5, 6, 7, 8}});
  EXPECT_TRUE(ValidateRequest(r).ok());
  EXPECT_EQ(r.home_of(5), 2);
}

TEST(ValidateRequestTest, NamesTheBadField) {
  PlanRequest r = MakeRequest(4, 8, 2, {});
  r = testing::Reshaped(r, [](Problem& p) { p.experts = 6; });
  EXPECT_NE(ValidateRequest(r).message().find("experts: 6 is not divisible"), std::string::npos);
  r = MakeRequest(4, 8, 2, {});
  r = testing::Reshaped(r, [](Problem& p) { p.slots_per_rank = -1; });
  EXPECT_EQ(ValidateRequest(r).message(), "slots_per_rank: must be >= 0, got -1");
  r = MakeRequest(4, 8, 2, {});
  r.load.at(3, 7) = -5;
  EXPECT_EQ(ValidateRequest(r).message().substr(0, 13), "load[3][7]: m");
  r = MakeRequest(4, 8, 2, {});
  r.load = LoadMatrix(3, 8);
  EXPECT_NE(ValidateRequest(r).message().find("load: must be 4 rows"), std::string::npos);
  r = MakeRequest(4, 8, 2, {});
  r.target_imbalance_pct = -1;
  EXPECT_NE(ValidateRequest(r).message().find("target_imbalance_pct"), std::string::npos);
  r = MakeRequest(4, 8, 2, {});
  r = testing::Reshaped(r, [](Problem& p) { p.expert_bytes = -3; });
  EXPECT_NE(ValidateRequest(r).message().find("expert_bytes"), std::string::npos);
}

TEST(ValidateRequestTest, ChecksTheRangeRules) {
  PlanRequest r = MakeRequest(2, 2, 1, {});
  r.load.at(0, 0) = kMaxTokensPerEntry + 1;
  EXPECT_NE(ValidateRequest(r).message().find("load[0][0]"), std::string::npos);
  r = MakeRequest(64, 128, 1, {});  // 8192 entries of 2^40: 2^53 tokens
  for (int s = 0; s < 64; ++s) {
    for (int e = 0; e < 128; ++e) r.load.at(s, e) = kMaxTokensPerEntry;
  }
  EXPECT_NE(ValidateRequest(r).message().find("total number of tokens"), std::string::npos);
}

TEST(ValidateRequestTest, ChecksResidentReplicas) {
  PlanRequest r = MakeRequest(4, 8, 1, {});
  r.resident = {{0, 0}};
  EXPECT_NE(ValidateRequest(r).message().find("resident[0]: rank 0 is the home of expert 0"), std::string::npos);
  r.resident = {{0, 2}, {0, 2}};
  EXPECT_NE(ValidateRequest(r).message().find("is placed on rank 2 twice"), std::string::npos);
  r.resident = {{0, 2}, {1, 2}};
  EXPECT_NE(ValidateRequest(r).message().find("holds more than slots_per_rank = 1"), std::string::npos);
  r.resident = {{9, 2}};
  EXPECT_NE(ValidateRequest(r).message().find("expert 9 is out of range"), std::string::npos);
  r.resident = {{0, 2}, {2, 3}};
  EXPECT_TRUE(ValidateRequest(r).ok());
}

// The overload that also sums each expert: the totals a plain column sum gives on valid requests
// (rows long enough for the vectorized pass, and a short tail), and the same answer as the plain
// overload on every request, valid or not.
TEST(ValidateRequestTest, SumsEachExpertInTheSamePassAndAnswersAsThePlainCheck) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 40; ++trial) {
    const int ranks = 2 + static_cast<int>(rng() % 15);
    const int experts = ranks * (1 + static_cast<int>(rng() % 9));
    PlanRequest r = testing::RandomRequest(ranks, experts, 2, rng(), 4);
    if (trial % 4 == 1) r.load.at(static_cast<int>(rng() % ranks), static_cast<int>(rng() % experts)) = -7;
    if (trial % 4 == 2) r.load.at(ranks - 1, experts - 1) = kMaxTokensPerEntry + 1;
    std::vector<int64_t> totals(3, 99);  // stale contents are replaced
    const absl::Status summed = ValidateRequest(r, SlotLimit::kEnforced, totals);
    ASSERT_EQ(summed, ValidateRequest(r)) << "trial " << trial;
    if (!summed.ok()) continue;
    std::vector<int64_t> expected(static_cast<size_t>(experts), 0);
    for (int s = 0; s < ranks; ++s) {
      for (int e = 0; e < experts; ++e) expected[static_cast<size_t>(e)] += r.load.at(s, e);
    }
    ASSERT_EQ(totals, expected) << "trial " << trial;
  }
}

TEST(FirstOutOfRangeTest, FindsTheFirstEntryOutsideTheRangeAndOnlySuch) {
  const int64_t max = kMaxTokensPerEntry;
  EXPECT_EQ(FirstOutOfRange(std::vector<int64_t>{}), std::nullopt);
  EXPECT_EQ(FirstOutOfRange(std::vector<int64_t>{0, 5, max}), std::nullopt);  // the bound itself is valid
  EXPECT_EQ(FirstOutOfRange(std::vector<int64_t>{max, max, max - 1}), std::nullopt);
  EXPECT_EQ(FirstOutOfRange(std::vector<int64_t>{3, max + 1, -1}), 1u);
  EXPECT_EQ(FirstOutOfRange(std::vector<int64_t>{max, 3, -1, max + 1}), 2u);
  EXPECT_EQ(FirstOutOfRange(std::vector<int64_t>{std::numeric_limits<int64_t>::min()}), 0u);
  EXPECT_EQ(FirstOutOfRange(std::vector<int64_t>{0, std::numeric_limits<int64_t>::max()}), 1u);
  // Against a plain scan, on rows long enough to take the vectorized pass.
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<int64_t> row(static_cast<size_t>(rng() % 300));
    for (int64_t& v : row) v = static_cast<int64_t>(rng() % (1u << 20));
    if (!row.empty() && trial % 3 != 0) {
      const int64_t bad[] = {-1, max + 1, max, std::numeric_limits<int64_t>::min(), -max};
      row[rng() % row.size()] = bad[rng() % 5];
    }
    std::optional<size_t> expected;
    for (size_t i = 0; i < row.size() && !expected; ++i) {
      if (row[i] < 0 || row[i] > max) expected = i;
    }
    ASSERT_EQ(FirstOutOfRange(row), expected) << "trial " << trial;
  }
}
}  // namespace
}  // namespace taot
