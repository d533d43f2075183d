#include "trace_npy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "trace_test_dir.h"

namespace taot::sim {
namespace {

using ::testing::HasSubstr;

class TraceNpyTest : public TraceTestDir {
 protected:
  absl::StatusOr<TraceLayer> Read(const std::string& name) const {
    return ReadNpyTraceLayer(Path(name), "trace/" + name);
  }
  std::string ReadError(const std::string& name) const { return std::string(Read(name).status().message()); }
};

TEST_F(TraceNpyTest, ReadsStepsRanksExperts) {
  WriteNpy("a.npy", "<i8", "(2, 2, 2)", LittleEndian({1, 2, 3, 4, 5, 6, 7, 8}, 8));
  const auto layer = Read("a.npy");
  ASSERT_TRUE(layer.ok()) << layer.status();
  EXPECT_EQ(layer->dims, (TraceDims{.steps = 2, .microbatches = 1, .ranks = 2, .experts = 2}));
  ASSERT_EQ(layer->matrices.size(), 2u);
  EXPECT_EQ(layer->matrices[0].data(), (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(layer->matrices[1].at(1, 0), 7);
}

TEST_F(TraceNpyTest, AFourthDimensionIsMicrobatches) {
  WriteNpy("a.npy", "|u1", "(2, 3, 1, 1)", LittleEndian({0, 1, 2, 3, 4, 5}, 1));
  const auto layer = Read("a.npy");
  ASSERT_TRUE(layer.ok()) << layer.status();
  EXPECT_EQ(layer->dims, (TraceDims{.steps = 2, .microbatches = 3, .ranks = 1, .experts = 1}));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(layer->matrices[size_t(i)].at(0, 0), i);
}

TEST_F(TraceNpyTest, ReadsVersionTwoAndThreeHeaders) {
  for (char major : {'\x02', '\x03'}) {
    std::string dict = "{'descr': '<i2', 'fortran_order': False, 'shape': (1, 1, 2), }";
    while ((12 + dict.size() + 1) % 64 != 0) dict += ' ';
    dict += '\n';
    std::string out("\x93NUMPY", 6);
    out += major;
    out += '\0';
    out += LittleEndian({int64_t(dict.size())}, 4);
    WriteText("a.npy", out + dict + LittleEndian({300, 7}, 2));
    const auto layer = Read("a.npy");
    ASSERT_TRUE(layer.ok()) << layer.status();
    EXPECT_EQ(layer->matrices[0].data(), (std::vector<int64_t>{300, 7}));
  }
}

TEST_F(TraceNpyTest, UnsignedCountsAboveTheLimitAreShownUnsigned) {
  WriteNpy("a.npy", "<u8", "(1, 1, 2)", LittleEndian({5, -1}, 8));
  EXPECT_EQ(ReadError("a.npy"),
            "trace/a.npy: element [0, 0, 1]: must be an integer in [0, 2^40], got "
            "18446744073709551615");
  WriteNpy("a.npy", "<u8", "(1, 1, 1)", LittleEndian({int64_t{1} << 40}, 8));
  EXPECT_TRUE(Read("a.npy").ok());
}

TEST_F(TraceNpyTest, BigEndianIsRefusedWithTheFix) {
  WriteNpy("a.npy", ">i4", "(1, 1, 1)", LittleEndian({0}, 4));
  EXPECT_EQ(ReadError("a.npy"), "trace/a.npy: dtype '>i4' is big-endian; save it little-endian (a.astype('<i4'))");
}

TEST_F(TraceNpyTest, FortranOrderIsRefusedWithTheFix) {
  WriteNpy("a.npy", "<i4", "(1, 1, 2)", I4({1, 2}), /*fortran=*/true);
  EXPECT_EQ(ReadError("a.npy"), "trace/a.npy: fortran_order is True; save a C-order array (np.ascontiguousarray(a))");
}

TEST_F(TraceNpyTest, BytesAfterTheDataAreRefused) {
  WriteNpy("a.npy", "<i4", "(1, 1, 1)", I4({1, 2}));
  EXPECT_EQ(ReadError("a.npy"),
            "trace/a.npy: 4 bytes follow the data (shape (1, 1, 1) of '<i4' needs 4); is this an "
            "NPY file written by np.save?");
}

TEST_F(TraceNpyTest, AShapeThatOverflowsIsTruncatedNotAllocated) {
  WriteNpy("a.npy", "<i8", "(2147483647, 1, 1)", I4({1}));
  EXPECT_EQ(ReadError("a.npy"),
            "trace/a.npy: truncated: shape (2147483647, 1, 1) of '<i8' needs 17179869176 data "
            "bytes, the file holds 4");
}

TEST_F(TraceNpyTest, TheHeaderLengthMayNotPassTheEndOfTheFile) {
  WriteText("a.npy", std::string("\x93NUMPY\x01\x00\x40\x00{'descr'", 17));
  EXPECT_EQ(ReadError("a.npy"), "trace/a.npy: truncated in the header (17 bytes)");
  // Version 2.0's four length bytes, of which the file holds three.
  WriteText("a.npy", std::string("\x93NUMPY\x02\x00\x05\x00\x00", 11));
  EXPECT_EQ(ReadError("a.npy"), "trace/a.npy: truncated in the header (11 bytes)");
}

TEST_F(TraceNpyTest, AnUnsupportedVersionIsNamed) {
  WriteText("a.npy", std::string("\x93NUMPY\x09\x00\x00\x00", 10));
  EXPECT_EQ(ReadError("a.npy"), "trace/a.npy: NPY version 9.0 is not supported (1.0, 2.0 or 3.0)");
}

TEST_F(TraceNpyTest, AMissingFileIsNotFound) {
  const absl::Status s = Read("absent.npy").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr("trace/absent.npy: cannot open: "));
}

TEST_F(TraceNpyTest, ShapesMustBeThreeOrFourPositiveDimensions) {
  EXPECT_EQ(TraceDimsOfNpyShape({5}).status().message(),
            "shape (5,) must be (steps, ranks, experts) or (steps, microbatches, ranks, experts)");
  EXPECT_EQ(TraceDimsOfNpyShape(std::vector<int64_t>(9, 1)).status().message(),
            "shape has 9 dimensions; it must be (steps, ranks, experts) or (steps, microbatches, "
            "ranks, experts)");
  EXPECT_EQ(TraceDimsOfNpyShape({0, 1, 1}).status().message(), "shape (0, 1, 1): steps must be in [1, 2147483647]");
  EXPECT_EQ(TraceDimsOfNpyShape({1, 1, 0, 1}).status().message(),
            "shape (1, 1, 0, 1): ranks must be in [1, 2147483647]");
  EXPECT_EQ(TraceDimsOfNpyShape({1, 2147483648, 1, 1}).status().message(),
            "shape (1, 2147483648, 1, 1): microbatches must be in [1, 2147483647]");
  EXPECT_THAT(TraceDimsOfNpyShape({1, 1, 70000}).status().message(),
              HasSubstr("experts: must be in [1, 65536], got 70000"));
  EXPECT_EQ(TraceDimsOfNpyShape({3, 2, 4, 8}).value(),
            (TraceDims{.steps = 3, .microbatches = 2, .ranks = 4, .experts = 8}));
}

TEST_F(TraceNpyTest, WrittenLayersReadBack) {
  for (int microbatches : {1, 2}) {
    const WorkloadShape shape{.ranks = 2, .experts = 4, .layers = 1, .steps = 3, .microbatches = microbatches};
    std::string out = NpyTraceLayerPreamble(shape);
    std::vector<LoadMatrix> written;
    for (int i = 0; i < shape.steps * microbatches; ++i) {
      LoadMatrix m(2, 4);
      for (int r = 0; r < 2; ++r)
        for (int e = 0; e < 4; ++e) m.at(r, e) = (i * 8 + r * 4 + e) * 1000003;
      AppendNpyTraceMatrix(out, m);
      written.push_back(m);
    }
    WriteText("w.npy", out);
    const auto layer = Read("w.npy");
    ASSERT_TRUE(layer.ok()) << layer.status();
    EXPECT_EQ(layer->dims, (TraceDims{.steps = 3, .microbatches = microbatches, .ranks = 2, .experts = 4}));
    ASSERT_EQ(layer->matrices.size(), written.size());
    for (size_t i = 0; i < written.size(); ++i) EXPECT_EQ(layer->matrices[i].data(), written[i].data()) << i;
  }
}

}  // namespace
}  // namespace taot::sim
