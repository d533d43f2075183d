#include "trace_layer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "taot/planner/load_matrix.h"

namespace taot::sim {
namespace {

using ::testing::HasSubstr;

TEST(TraceLayerTest, EmptyLayerHoldsOneZeroMatrixPerStepAndMicrobatch) {
  const TraceDims dims{.steps = 3, .microbatches = 2, .ranks = 2, .experts = 4};
  const TraceLayer layer = EmptyTraceLayer(dims);
  EXPECT_EQ(layer.dims, dims);
  ASSERT_EQ(layer.matrices.size(), 6u);
  for (const LoadMatrix& m : layer.matrices) {
    EXPECT_EQ(m.sources(), 2);
    EXPECT_EQ(m.experts(), 4);
    EXPECT_EQ(m.data(), std::vector<int64_t>(8, 0));
  }
}

TEST(TraceLayerTest, DimsReadAsNumpyWouldShowTheShape) {
  EXPECT_EQ(TraceDimsString({.steps = 5, .microbatches = 1, .ranks = 16, .experts = 128}), "(5, 16, 128)");
  EXPECT_EQ(TraceDimsString({.steps = 5, .microbatches = 2, .ranks = 16, .experts = 128}), "(5, 2, 16, 128)");
}

TEST(TraceLayerTest, FileErrorsAreInvalidArgumentAndStartWithTheName) {
  const absl::Status s = LayerFileError("trace/layer_000.csv", "no data rows after the header");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "trace/layer_000.csv: no data rows after the header");
}

TEST(TraceLayerTest, CountsAreHeldToZeroThroughTwoToTheForty) {
  EXPECT_FALSE(CountProblem(0).has_value());
  EXPECT_FALSE(CountProblem(kMaxTokensPerEntry).has_value());
  EXPECT_EQ(CountProblem(-1), "must be an integer in [0, 2^40], got -1");
  EXPECT_EQ(CountProblem(kMaxTokensPerEntry + 1), "must be an integer in [0, 2^40], got 1099511627777");
}

TEST(TraceLayerTest, TotalsAreHeldToTwoToTheFiftyTwo) {
  // 4096 entries of 2^40 sum to exactly 2^52: allowed; one token more is not.
  LoadMatrix m(1, 4096);
  for (int e = 0; e < 4096; ++e) m.at(0, e) = kMaxTokensPerEntry;
  EXPECT_FALSE(TotalProblem(m).has_value());
  LoadMatrix over(1, 4097);
  for (int e = 0; e < 4096; ++e) over.at(0, e) = kMaxTokensPerEntry;
  over.at(0, 4096) = 1;
  EXPECT_EQ(TotalProblem(over), "holds more than 2^52 (4503599627370496) tokens in total");
}

TEST(TraceLayerTest, MatrixSizeUsesTheRequestLimitsUnderTraceNames) {
  EXPECT_TRUE(CheckMatrixSize({.steps = 1, .ranks = 4096, .experts = 4096}).ok());
  EXPECT_THAT(CheckMatrixSize({.steps = 1, .ranks = 4097, .experts = 4097}).message(),
              HasSubstr("ranks: must be in [1, 4096], got 4097"));
  EXPECT_THAT(CheckMatrixSize({.steps = 1, .ranks = 1, .experts = 65537}).message(),
              HasSubstr("experts: must be in [1, 65536], got 65537"));
}

TEST(TraceLayerTest, ExpertsMustBeAMultipleOfRanks) {
  const TraceLayer layer = EmptyTraceLayer({.steps = 1, .ranks = 2, .experts = 3});
  const absl::Status s = CheckTraceLayer(layer, "f.npy");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "f.npy: 3 experts is not a multiple of 2 ranks (every rank is home to experts / ranks "
            "of them)");
}

TEST(TraceLayerTest, AnOversizedTotalNamesItsStepAndMicrobatch) {
  TraceLayer layer = EmptyTraceLayer({.steps = 2, .microbatches = 2, .ranks = 1, .experts = 4097});
  for (int e = 0; e < 4097; ++e) layer.matrices[3].at(0, e) = kMaxTokensPerEntry;
  EXPECT_EQ(CheckTraceLayer(layer, "f.npy").message(),
            "f.npy: step 1, microbatch 1: holds more than 2^52 (4503599627370496) tokens in total");
  TraceLayer plain = EmptyTraceLayer({.steps = 2, .ranks = 1, .experts = 4097});
  for (int e = 0; e < 4097; ++e) plain.matrices[1].at(0, e) = kMaxTokensPerEntry;
  EXPECT_THAT(CheckTraceLayer(plain, "f.csv").message(), HasSubstr("f.csv: step 1: holds more"));
}

TEST(TraceLayerTest, AValidLayerPasses) {
  TraceLayer layer = EmptyTraceLayer({.steps = 2, .ranks = 2, .experts = 4});
  layer.matrices[1].at(1, 3) = kMaxTokensPerEntry;
  EXPECT_TRUE(CheckTraceLayer(layer, "f.csv").ok());
}

}  // namespace
}  // namespace taot::sim
