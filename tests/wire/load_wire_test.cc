#include "taot/wire/load_wire.h"

#include <gtest/gtest.h>

#include <vector>

namespace taot::wire {
namespace {

TEST(LoadWireTest, ARowRoundTripsAndIsViewedInPlace) {
  const std::vector<int64_t> row = {0, 7, int64_t{1} << 40, 3};
  taot::v1::ReportLoadRequest request;
  RowToProto(row, *request.mutable_counts());
  const std::span<const int64_t> view = RowFromProto(request.counts());
  EXPECT_EQ(std::vector<int64_t>(view.begin(), view.end()), row);
  EXPECT_EQ(view.data(), request.counts().data());
}

TEST(LoadWireTest, AMatrixRoundTripsRowMajor) {
  LoadMatrix load(2, 3);
  for (int s = 0; s < 2; ++s) {
    for (int e = 0; e < 3; ++e) load.row(s)[e] = 10 * s + e;
  }
  taot::v1::ReportMatrixRequest request;
  MatrixToProto(load, request);
  EXPECT_EQ(request.ranks(), 2);
  EXPECT_EQ(request.experts(), 3);
  EXPECT_EQ(request.counts(4), 11);  // row 1, expert 1
  absl::StatusOr<LoadMatrix> decoded = MatrixFromProto(request);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->sources(), 2);
  EXPECT_EQ(decoded->experts(), 3);
  EXPECT_EQ(decoded->data(), load.data());
}

TEST(LoadWireTest, CountsThatAreNotRanksTimesExpertsAreRefused) {
  taot::v1::ReportMatrixRequest request;
  request.set_ranks(2);
  request.set_experts(3);
  for (int i = 0; i < 5; ++i) request.add_counts(1);
  absl::Status s = MatrixFromProto(request).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "counts: must hold ranks x experts = 2 x 3 entries, got 5");
  request.set_ranks(0);
  request.clear_counts();
  s = MatrixFromProto(request).status();
  EXPECT_EQ(s.message(), "counts: must hold ranks x experts = 0 x 3 entries, got 0");
  request.set_ranks(-1);
  request.set_experts(-3);
  for (int i = 0; i < 3; ++i) request.add_counts(1);
  EXPECT_EQ(MatrixFromProto(request).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace taot::wire
