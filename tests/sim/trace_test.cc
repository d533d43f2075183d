#include "taot/sim/trace.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "trace_test_dir.h"

namespace taot::sim {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;

// Deterministic pseudo-random counts (a hash of the indices), with a few at the 2^40 limit so
// the round trip covers the full range.
class HashWorkload : public Workload {
 public:
  explicit HashWorkload(WorkloadShape shape) : shape_(shape) {}
  WorkloadShape shape() const override { return shape_; }
  LoadMatrix Load(int step, int layer, int microbatch) const override {
    LoadMatrix m(shape_.ranks, shape_.experts);
    for (int r = 0; r < shape_.ranks; ++r) {
      for (int e = 0; e < shape_.experts; ++e) {
        uint64_t h = (((uint64_t(step) * 131 + layer) * 137 + microbatch) * 139 + r) * 149 + e;
        h ^= h >> 17;
        h *= 0x9e3779b97f4a7c15ull;
        h ^= h >> 29;
        m.at(r, e) = h % 97 == 0 ? kMaxTokensPerEntry : int64_t(h % 5000);
      }
    }
    return m;
  }

 private:
  WorkloadShape shape_;
};

WorkloadShape Shape(int microbatches) {
  return {.ranks = 4, .experts = 8, .layers = 3, .steps = 5, .microbatches = microbatches};
}

class TraceTest : public TraceTestDir {
 protected:
  absl::Status ReadError() const { return ReadTrace(dir_).status(); }
};

void ExpectSameWorkload(const Workload& a, const Workload& b) {
  const WorkloadShape s = a.shape();
  const WorkloadShape t = b.shape();
  ASSERT_EQ(s.ranks, t.ranks);
  ASSERT_EQ(s.experts, t.experts);
  ASSERT_EQ(s.layers, t.layers);
  ASSERT_EQ(s.steps, t.steps);
  ASSERT_EQ(s.microbatches, t.microbatches);
  for (int l = 0; l < s.layers; ++l) {
    for (int st = 0; st < s.steps; ++st) {
      for (int m = 0; m < s.microbatches; ++m) {
        ASSERT_EQ(a.Load(st, l, m).data(), b.Load(st, l, m).data()) << st << " " << l << " " << m;
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Round trips.

TEST_F(TraceTest, RoundTripsEveryFormatWithAndWithoutMicrobatches) {
  for (TraceFormat format : {TraceFormat::kCsv, TraceFormat::kNpy}) {
    for (int microbatches : {1, 3}) {
      const std::string out = Path("t" + std::to_string(int(format)) + std::to_string(microbatches));
      const HashWorkload w(Shape(microbatches));
      ASSERT_TRUE(WriteTrace(w, out, format).ok());
      for (int l = 0; l < 3; ++l) EXPECT_TRUE(fs::exists(fs::path(out) / TraceLayerFileName(l, format)));
      const auto read = ReadTrace(out);
      ASSERT_TRUE(read.ok()) << read.status();
      ExpectSameWorkload(w, **read);
    }
  }
}

TEST_F(TraceTest, WritesTheMicrobatchColumnOnlyWhenThereAreMicrobatches) {
  ASSERT_TRUE(WriteTrace(HashWorkload(Shape(1)), Path("one"), TraceFormat::kCsv).ok());
  ASSERT_TRUE(WriteTrace(HashWorkload(Shape(2)), Path("two"), TraceFormat::kCsv).ok());
  std::string header;
  std::getline(std::ifstream(Path("one/layer_000.csv")), header);
  EXPECT_EQ(header, "step,rank,e0,e1,e2,e3,e4,e5,e6,e7");
  std::getline(std::ifstream(Path("two/layer_000.csv")), header);
  EXPECT_EQ(header, "step,microbatch,rank,e0,e1,e2,e3,e4,e5,e6,e7");
}

TEST_F(TraceTest, ReadsASingleFileAsOneLayer) {
  WriteNpy("routing.npy", "<i4", "(2, 1, 2)", I4({1, 2, 3, 4}));
  const auto read = ReadTrace(Path("routing.npy"));
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ((*read)->shape().layers, 1);
  EXPECT_EQ((*read)->shape().steps, 2);
  EXPECT_EQ((*read)->Load(1, 0, 0).data(), (std::vector<int64_t>{3, 4}));
}

TEST_F(TraceTest, CsvAllowsAnyRowOrderCommentsBlankLinesAndCrlf) {
  WriteText("layer_000.csv",
            "# recorded by a test\r\n"
            "step,microbatch,rank,e0,e1\r\n"
            "\r\n"
            "1,0,1,7,8\r\n"
            "0,0,0,1,2\r\n"
            "# a comment between rows\r\n"
            "1, 0, 0, 5, 6\r\n"
            "0,0,1,3,4\r\n");
  const auto read = ReadTrace(dir_);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ((*read)->shape().microbatches, 1);
  EXPECT_EQ((*read)->Load(0, 0, 0).data(), (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ((*read)->Load(1, 0, 0).data(), (std::vector<int64_t>{5, 6, 7, 8}));
}

TEST_F(TraceTest, IgnoresFilesThatAreNotLayers) {
  WriteText("layer_000.csv", "step,rank,e0\n0,0,5\n");
  WriteText("README.txt", "from run 42");
  const auto read = ReadTrace(dir_);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ((*read)->shape().layers, 1);
}

// ---------------------------------------------------------------------------------------------
// Finding the files.

TEST_F(TraceTest, MissingDirectory) {
  const absl::Status s = ReadTrace(Path("nope")).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.message(), AllOf(HasSubstr(Path("nope")), HasSubstr("no such")));
}

TEST_F(TraceTest, NoLayerFiles) {
  WriteText("notes.txt", "");
  const absl::Status s = ReadError();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.message(), AllOf(HasSubstr(dir_), HasSubstr("no layer files")));
}

TEST_F(TraceTest, GapInLayerNumbering) {
  WriteText("layer_000.csv", "step,rank,e0\n0,0,1\n");
  WriteText("layer_002.csv", "step,rank,e0\n0,0,1\n");
  EXPECT_THAT(ReadError().message(), AllOf(HasSubstr(dir_), HasSubstr("layer_001.csv is missing")));
}

TEST_F(TraceTest, LayerNamesNeedThreeDigits) {
  WriteText("layer_0.csv", "step,rank,e0\n0,0,1\n");
  EXPECT_THAT(ReadError().message(), AllOf(HasSubstr(Path("layer_0.csv")), HasSubstr("three digits")));
}

TEST_F(TraceTest, MixedFormats) {
  WriteText("layer_000.csv", "step,rank,e0\n0,0,1\n");
  WriteNpy("layer_001.npy", "<i4", "(1, 1, 1)", I4({1}));
  EXPECT_THAT(ReadError().message(),
              AllOf(HasSubstr("mixes formats"), HasSubstr("layer_000.csv"), HasSubstr("layer_001.npy")));
}

TEST_F(TraceTest, ShapeMismatchBetweenLayers) {
  WriteNpy("layer_000.npy", "<i4", "(2, 1, 2)", I4({1, 2, 3, 4}));
  WriteNpy("layer_001.npy", "<i4", "(1, 1, 2)", I4({1, 2}));
  EXPECT_THAT(ReadError().message(),
              HasSubstr(Path("layer_001.npy") + ": shape (1, 1, 2) differs from layer_000.npy's (2, 1, 2)"));
}

// ---------------------------------------------------------------------------------------------
// NPY.

TEST_F(TraceTest, NpyBadDtype) {
  WriteNpy("layer_000.npy", "<f4", "(1, 1, 1)", I4({0}));
  const absl::Status s = ReadError();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr(Path("layer_000.npy") + ": dtype '<f4' is not an integer type (use int32/int64)"));
}

TEST_F(TraceTest, NpyFortranOrder) {
  WriteNpy("layer_000.npy", "<i4", "(1, 1, 2)", I4({1, 2}), /*fortran=*/true);
  EXPECT_THAT(ReadError().message(), AllOf(HasSubstr(Path("layer_000.npy")), HasSubstr("fortran_order is True")));
}

TEST_F(TraceTest, NpyTruncatedData) {
  WriteNpy("layer_000.npy", "<i4", "(2, 1, 2)", I4({1, 2, 3}));
  EXPECT_THAT(ReadError().message(), AllOf(HasSubstr(Path("layer_000.npy")), HasSubstr("truncated"),
                                           HasSubstr("needs 16 data bytes, the file holds 12")));
}

TEST_F(TraceTest, NpyTruncatedHeader) {
  WriteText("layer_000.npy", std::string("\x93NUMPY\x01\x00\x76\x00{'descr'", 17));
  EXPECT_THAT(ReadError().message(), AllOf(HasSubstr(Path("layer_000.npy")), HasSubstr("truncated")));
}

TEST_F(TraceTest, NpyNotNpy) {
  WriteText("layer_000.npy", "step,rank,e0\n0,0,1\n");
  EXPECT_THAT(ReadError().message(), AllOf(HasSubstr(Path("layer_000.npy")), HasSubstr("not an NPY file")));
}

TEST_F(TraceTest, NpyNegativeCountNamesTheElement) {
  WriteNpy("layer_000.npy", "<i4", "(2, 1, 2)", I4({1, 2, 3, -5}));
  EXPECT_THAT(ReadError().message(),
              HasSubstr(Path("layer_000.npy") + ": element [1, 0, 1]: must be an integer in [0, 2^40], got -5"));
}

TEST_F(TraceTest, NpyWrongRank) {
  WriteNpy("layer_000.npy", "<i4", "(2, 2)", I4({1, 2, 3, 4}));
  EXPECT_THAT(ReadError().message(),
              AllOf(HasSubstr(Path("layer_000.npy")), HasSubstr("shape (2, 2) must be (steps, ranks, experts)")));
}

TEST_F(TraceTest, NpyExpertsNotAMultipleOfRanks) {
  WriteNpy("layer_000.npy", "<i4", "(1, 2, 3)", I4({1, 2, 3, 4, 5, 6}));
  EXPECT_THAT(ReadError().message(),
              AllOf(HasSubstr(Path("layer_000.npy")), HasSubstr("3 experts is not a multiple of 2 ranks")));
}

// Issue 11: the readers take outside files, so sizes are held to the request limits before
// anything is allocated, and no error quotes more than a short prefix of the file.

TEST_F(TraceTest, NpyShapeBeyondTheRequestLimitsIsRefusedBeforeReadingData) {
  WriteNpy("layer_000.npy", "<i1", "(1, 8192, 8192)", "");
  EXPECT_THAT(ReadError().message(), HasSubstr(Path("layer_000.npy") + ": ranks: must be in [1, 4096], got 8192"));
  WriteNpy("layer_000.npy", "<i1", "(1, 1, 70000)", "");
  EXPECT_THAT(ReadError().message(), HasSubstr(Path("layer_000.npy") + ": experts: must be in [1, 65536], got 70000"));
  WriteNpy("layer_000.npy", "<i1", "(1, 4096, 8192)", "");
  EXPECT_THAT(ReadError().message(), HasSubstr("ranks x experts: 4096 x 8192 load entries is more than the limit"));
}

TEST_F(TraceTest, NpyHeaderLargerThanNumpyWritesIsRefused) {
  // numpy itself refuses headers over 10,000 bytes unless told otherwise.
  const std::string dict =
      "{'descr': '<i4', 'fortran_order': False, 'shape': (1, 1, 1), }" + std::string(100000, ' ') + "\n";
  std::string out("\x93NUMPY\x02\x00", 8);
  for (int i = 0; i < 4; ++i) out += char((dict.size() >> (8 * i)) & 0xff);
  WriteText("layer_000.npy", out + dict + I4({1}));
  EXPECT_THAT(ReadError().message(),
              HasSubstr(Path("layer_000.npy") + ": the NPY header of 100063 bytes is more than the limit of 65536"));
}

TEST_F(TraceTest, NpyErrorsQuoteOnlyAShortPrefix) {
  WriteNpy("layer_000.npy", "<i4" + std::string(20000, 'x'), "(1, 1, 1)", I4({1}));
  std::string message(ReadError().message());
  EXPECT_THAT(message, HasSubstr("dtype '<i4xxxxx"));
  EXPECT_LT(message.size(), Path("layer_000.npy").size() + 200) << message.substr(0, 300);
  WriteNpy("layer_000.npy", "<i4", "(1, 1, 1" + std::string(20000, ' ') + "?", I4({1}));
  message = std::string(ReadError().message());
  EXPECT_THAT(message, HasSubstr("malformed NPY header: expected ',' or ')' at byte"));
  EXPECT_LT(message.size(), Path("layer_000.npy").size() + 200) << message.substr(0, 300);
  WriteNpy("layer_000.npy", "<i4", "(1, 1, 1), '" + std::string(20000, 'k') + "': 1", I4({1}));
  message = std::string(ReadError().message());
  EXPECT_THAT(message, HasSubstr("unexpected key 'kkkk"));
  EXPECT_LT(message.size(), Path("layer_000.npy").size() + 200) << message.substr(0, 300);
  std::string many_dims = "(1, 1";
  for (int i = 0; i < 20000; ++i) many_dims += ", 1";
  WriteNpy("layer_000.npy", "<i4", many_dims + ")", I4({1}));
  message = std::string(ReadError().message());
  EXPECT_THAT(message, HasSubstr("has 20002 dimensions"));
  EXPECT_LT(message.size(), Path("layer_000.npy").size() + 200) << message.substr(0, 300);
}

TEST_F(TraceTest, CsvSizesBeyondTheRequestLimitsAreRefused) {
  std::string header = "step,rank";
  for (int e = 0; e < 70000; ++e) header += ",e" + std::to_string(e);
  WriteText("layer_000.csv", header + "\n");
  EXPECT_THAT(ReadError().message(),
              HasSubstr(Path("layer_000.csv") + ":1: 70000 expert columns, more than the limit of 65536"));
  WriteText("layer_000.csv", "step,rank,e0\n0,4096,1\n");
  EXPECT_THAT(ReadError().message(),
              HasSubstr(Path("layer_000.csv") + ":2: column rank: must be an integer in [0, 4095], got '4096'"));
}

TEST_F(TraceTest, CsvErrorsQuoteOnlyAShortPrefix) {
  const std::string junk(100000, 'z');
  for (const std::string& text : {"step,rank,e0," + junk + "\n", junk + "\n", "step,rank,e0\n0,0," + junk + "\n",
                                  "step,rank,e0\n" + junk + ",0,1\n"}) {
    WriteText("layer_000.csv", text);
    const std::string message(ReadError().message());
    EXPECT_THAT(message, HasSubstr("zzzz..."));
    EXPECT_LT(message.size(), Path("layer_000.csv").size() + 200) << message.substr(0, 300);
  }
}

// ---------------------------------------------------------------------------------------------
// CSV.

TEST_F(TraceTest, CsvNegativeCount) {
  WriteText("layer_000.csv", "step,rank,e0,e1\n0,0,1,2\n0,1,3,-2\n");
  const absl::Status s = ReadError();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr(Path("layer_000.csv") + ":3: column e1: must be an integer >= 0, got '-2'"));
}

TEST_F(TraceTest, CsvNonInteger) {
  WriteText("layer_000.csv", "step,rank,e0,e1\n0,0,1.5,2\n0,1,3,4\n");
  EXPECT_THAT(ReadError().message(),
              HasSubstr(Path("layer_000.csv") + ":2: column e0: must be an integer >= 0, got '1.5'"));
}

TEST_F(TraceTest, CsvCountAboveTheLimit) {
  WriteText("layer_000.csv", "step,rank,e0\n0,0,1099511627777\n");
  EXPECT_THAT(ReadError().message(),
              AllOf(HasSubstr(Path("layer_000.csv") + ":2: column e0"), HasSubstr("1099511627777")));
}

TEST_F(TraceTest, CsvWrongColumnCount) {
  WriteText("layer_000.csv", "step,rank,e0,e1\n0,0,1,2\n0,1,3\n");
  EXPECT_THAT(ReadError().message(), HasSubstr(Path("layer_000.csv") + ":3: 3 columns, the header has 4"));
}

TEST_F(TraceTest, CsvBadHeader) {
  WriteText("layer_000.csv", "step,rank,e0,e2\n0,0,1,2\n");
  EXPECT_THAT(ReadError().message(), HasSubstr(Path("layer_000.csv") + ":1: header column 4: expected 'e1', got 'e2'"));
}

TEST_F(TraceTest, CsvDuplicateRow) {
  WriteText("layer_000.csv", "step,rank,e0,e1\n0,0,1,2\n0,1,3,4\n0,0,5,6\n");
  EXPECT_THAT(ReadError().message(),
              HasSubstr(Path("layer_000.csv") + ":4: duplicate row for step 0, rank 0 (also on line 2)"));
}

TEST_F(TraceTest, CsvMissingRow) {
  WriteText("layer_000.csv",
            "step,microbatch,rank,e0,e1\n0,0,0,1,2\n0,0,1,3,4\n0,1,0,1,2\n1,0,0,1,2\n1,0,1,1,2\n"
            "1,1,0,1,2\n1,1,1,1,2\n");
  EXPECT_THAT(ReadError().message(),
              AllOf(HasSubstr(Path("layer_000.csv")), HasSubstr("no row for step 0, microbatch 1, rank 1")));
}

TEST_F(TraceTest, CsvExpertsNotAMultipleOfRanks) {
  WriteText("layer_000.csv", "step,rank,e0,e1,e2\n0,0,1,2,3\n0,1,3,4,5\n");
  EXPECT_THAT(ReadError().message(), HasSubstr(Path("layer_000.csv") + ": 3 experts is not a multiple of 2 ranks"));
}

// ---------------------------------------------------------------------------------------------
// Writing.

TEST_F(TraceTest, WriteRefusesToOverwriteALayerFile) {
  WriteText("layer_001.npy", "recorded data");
  const absl::Status s = WriteTrace(HashWorkload(Shape(1)), dir_, TraceFormat::kCsv);
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(s.message(), HasSubstr(Path("layer_001.npy") + " already exists"));
  EXPECT_FALSE(fs::exists(Path("layer_000.csv")));
  std::string kept;
  std::getline(std::ifstream(Path("layer_001.npy")), kept);
  EXPECT_EQ(kept, "recorded data");
}

TEST_F(TraceTest, WriteRejectsAShapeItCouldNotReadBack) {
  WorkloadShape shape = Shape(1);
  shape.experts = 6;
  const absl::Status s = WriteTrace(HashWorkload(shape), Path("out"), TraceFormat::kNpy);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("experts must be a positive multiple of ranks"));
}

TEST_F(TraceTest, WriteIntoAFileFails) {
  WriteText("file", "");
  const absl::Status s = WriteTrace(HashWorkload(Shape(1)), Path("file"), TraceFormat::kNpy);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr(Path("file")));
}

}  // namespace
}  // namespace taot::sim
