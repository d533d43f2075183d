#include "trace_csv.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "trace_test_dir.h"

namespace taot::sim {
namespace {

using ::testing::HasSubstr;

class TraceCsvTest : public TraceTestDir {
 protected:
  absl::StatusOr<TraceLayer> Read(const std::string& text) const {
    WriteText("a.csv", text);
    return ReadCsvTraceLayer(Path("a.csv"), "trace/a.csv");
  }
  std::string ReadError(const std::string& text) const { return std::string(Read(text).status().message()); }
};

TEST_F(TraceCsvTest, ReadsRowsIntoTheirStepMicrobatchAndRank) {
  const auto layer = Read(
      "step,microbatch,rank,e0\n"
      "0,0,0,1\n0,1,0,2\n1,0,0,3\n1,1,0,4\n");
  ASSERT_TRUE(layer.ok()) << layer.status();
  EXPECT_EQ(layer->dims, (TraceDims{.steps = 2, .microbatches = 2, .ranks = 1, .experts = 1}));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(layer->matrices[size_t(i)].at(0, 0), i + 1);
}

TEST_F(TraceCsvTest, FieldsMayBePaddedWithSpacesAndTabs) {
  const auto layer = Read("step ,\trank, e0 , e1\n 0 ,\t0\t, 5 ,6 \n");
  ASSERT_TRUE(layer.ok()) << layer.status();
  EXPECT_EQ(layer->matrices[0].data(), (std::vector<int64_t>{5, 6}));
}

TEST_F(TraceCsvTest, QuotedNumbersAreRefused) {
  EXPECT_EQ(ReadError("step,rank,e0\n0,0,\"5\"\n"), "trace/a.csv:2: column e0: must be an integer >= 0, got '\"5\"'");
}

TEST_F(TraceCsvTest, EmptyFilesAndHeaderOnlyFiles) {
  EXPECT_EQ(ReadError("# only a comment\n\n"),
            "trace/a.csv: no header line (step,rank,e0,e1,... or step,microbatch,rank,e0,...)");
  EXPECT_EQ(ReadError("step,rank,e0\n"), "trace/a.csv: no data rows after the header");
}

TEST_F(TraceCsvTest, HeaderMustNameTheIndexColumnsThenExperts) {
  EXPECT_EQ(ReadError("rank,step,e0\n"),
            "trace/a.csv:1: the header must start 'step,rank,e0,...' or "
            "'step,microbatch,rank,e0,...', got 'rank,step,e0'");
  EXPECT_EQ(ReadError("\n# recorded\nstep,microbatch,e0\n"),
            "trace/a.csv:3: the header must start 'step,rank,e0,...' or "
            "'step,microbatch,rank,e0,...', got 'step,microbatch,e0'");
  EXPECT_EQ(ReadError("step,rank\n"), "trace/a.csv:1: the header names no expert columns (e0, e1, ...)");
}

TEST_F(TraceCsvTest, IndexColumnsAreHeldToTheirRanges) {
  EXPECT_EQ(ReadError("step,rank,e0\n-1,0,1\n"),
            "trace/a.csv:2: column step: must be an integer in [0, 2147483646], got '-1'");
  EXPECT_EQ(ReadError("step,rank,e0\n2147483647,0,1\n"),
            "trace/a.csv:2: column step: must be an integer in [0, 2147483646], got '2147483647'");
  EXPECT_EQ(ReadError("step,microbatch,rank,e0\n0,x,0,1\n"),
            "trace/a.csv:2: column microbatch: must be an integer in [0, 2147483646], got 'x'");
  EXPECT_EQ(ReadError("step,microbatch,rank,e0\n0,0,,1\n"),
            "trace/a.csv:2: column rank: must be an integer in [0, 4095], got ''");
}

TEST_F(TraceCsvTest, CountsAboveTwoToTheFortySayTheLimit) {
  EXPECT_EQ(ReadError("step,rank,e0\n0,0,99999999999999999999\n"),
            "trace/a.csv:2: column e0: must be at most 2^40 (1099511627776), got "
            "'99999999999999999999'");
}

TEST_F(TraceCsvTest, MissingRowsAreNamedWithoutTheMicrobatchWhenThereIsNone) {
  EXPECT_EQ(ReadError("step,rank,e0\n0,0,1\n1,1,1\n0,1,1\n"),
            "trace/a.csv: no row for step 1, rank 0 (every (step, rank) up to the largest seen, "
            "step 1, rank 1, must appear exactly once)");
}

TEST_F(TraceCsvTest, AnIndexFarPastTheRowsIsAMissingRowNotAnAllocation) {
  EXPECT_EQ(ReadError("step,microbatch,rank,e0\n2147483646,2147483646,4095,1\n"),
            "trace/a.csv: no row for step 0, microbatch 0, rank 0 (every (step, microbatch, "
            "rank) up to the largest seen, step 2147483646, microbatch 2147483646, rank 4095, "
            "must appear exactly once)");
}

TEST_F(TraceCsvTest, AMissingFileIsNotFound) {
  const absl::Status s = ReadCsvTraceLayer(Path("absent.csv"), "trace/absent.csv").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr("trace/absent.csv: cannot open: "));
}

TEST_F(TraceCsvTest, WritesTheHeaderAndOneRowPerRank) {
  WorkloadShape shape{.ranks = 2, .experts = 2, .layers = 1, .steps = 1, .microbatches = 1};
  LoadMatrix m(2, 2);
  m.at(0, 1) = kMaxTokensPerEntry;
  m.at(1, 0) = 7;
  std::string out = CsvTraceLayerHeader(shape);
  AppendCsvTraceRows(out, m, shape, 0, 0);
  EXPECT_EQ(out, "step,rank,e0,e1\n0,0,0,1099511627776\n0,1,7,0\n");
  shape.microbatches = 3;
  out = CsvTraceLayerHeader(shape);
  AppendCsvTraceRows(out, m, shape, 4, 2);
  EXPECT_EQ(out, "step,microbatch,rank,e0,e1\n4,2,0,0,1099511627776\n4,2,1,7,0\n");
}

TEST_F(TraceCsvTest, WrittenLayersReadBack) {
  const WorkloadShape shape{.ranks = 3, .experts = 3, .layers = 1, .steps = 2, .microbatches = 2};
  std::string out = CsvTraceLayerHeader(shape);
  std::vector<LoadMatrix> written;
  for (int step = 0; step < 2; ++step) {
    for (int mb = 0; mb < 2; ++mb) {
      LoadMatrix m(3, 3);
      for (int r = 0; r < 3; ++r)
        for (int e = 0; e < 3; ++e) m.at(r, e) = step * 1000 + mb * 100 + r * 10 + e;
      AppendCsvTraceRows(out, m, shape, step, mb);
      written.push_back(m);
    }
  }
  const auto layer = Read(out);
  ASSERT_TRUE(layer.ok()) << layer.status();
  ASSERT_EQ(layer->matrices.size(), written.size());
  for (size_t i = 0; i < written.size(); ++i) EXPECT_EQ(layer->matrices[i].data(), written[i].data()) << i;
}

}  // namespace
}  // namespace taot::sim
