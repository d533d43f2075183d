#include "npy_format.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace taot::sim {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

const unsigned char* Bytes(const std::string& s) { return reinterpret_cast<const unsigned char*>(s.data()); }

// ---------------------------------------------------------------------------------------------
// The magic and version.

TEST(NpyPreambleTest, VersionOneHasATwoByteHeaderLengthLaterVersionsFour) {
  EXPECT_EQ(NpyHeaderLengthBytes(std::string("\x93NUMPY\x01\x00", 8)).value(), 2);
  EXPECT_EQ(NpyHeaderLengthBytes(std::string("\x93NUMPY\x02\x00", 8)).value(), 4);
  EXPECT_EQ(NpyHeaderLengthBytes(std::string("\x93NUMPY\x03\x00", 8)).value(), 4);
}

TEST(NpyPreambleTest, RefusesWhatLacksTheMagic) {
  for (const std::string& bytes : {std::string(), std::string("\x93NUMPY\x01", 7), std::string("step,rank,e0\n"),
                                   std::string("\x93numpy\x01\x00", 8)}) {
    EXPECT_EQ(NpyHeaderLengthBytes(bytes).status().message(), "not an NPY file (it lacks the \\x93NUMPY magic)");
  }
}

TEST(NpyPreambleTest, RefusesAnUnknownVersion) {
  EXPECT_EQ(NpyHeaderLengthBytes(std::string("\x93NUMPY\x04\x01", 8)).status().message(),
            "NPY version 4.1 is not supported (1.0, 2.0 or 3.0)");
  EXPECT_EQ(NpyHeaderLengthBytes(std::string("\x93NUMPY\x00\x00", 8)).status().message(),
            "NPY version 0.0 is not supported (1.0, 2.0 or 3.0)");
}

// ---------------------------------------------------------------------------------------------
// The header dict.

TEST(NpyHeaderTest, ReadsWhatNpSaveWrites) {
  const auto h = ParseNpyHeader("{'descr': '<i8', 'fortran_order': False, 'shape': (5, 16, 128), }   \n");
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->descr, "<i8");
  EXPECT_FALSE(h->fortran_order);
  EXPECT_EQ(h->shape, (std::vector<int64_t>{5, 16, 128}));
}

TEST(NpyHeaderTest, TakesKeysInAnyOrderDoubleQuotesAndPythonTwoLongs) {
  const auto h = ParseNpyHeader(R"({"shape": (2L, 3L), "fortran_order": True, "descr": "|u1"})");
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->descr, "|u1");
  EXPECT_TRUE(h->fortran_order);
  EXPECT_EQ(h->shape, (std::vector<int64_t>{2, 3}));
}

TEST(NpyHeaderTest, ReadsOneTuplesAndScalars) {
  EXPECT_EQ(ParseNpyHeader("{'descr': '<i4', 'fortran_order': False, 'shape': (7,)}")->shape,
            (std::vector<int64_t>{7}));
  EXPECT_TRUE(ParseNpyHeader("{'descr': '<i4', 'fortran_order': False, 'shape': ()}")->shape.empty());
}

TEST(NpyHeaderTest, NeedsEveryKey) {
  EXPECT_EQ(ParseNpyHeader("{'descr': '<i4', 'shape': (1,)}").status().message(),
            "the NPY header lacks one of 'descr', 'fortran_order' and 'shape'");
}

TEST(NpyHeaderTest, RefusesUnknownKeysAndStructuredDtypes) {
  EXPECT_EQ(ParseNpyHeader("{'descr': '<i4', 'order': 'C'}").status().message(),
            "unexpected key 'order' in the NPY header");
  EXPECT_EQ(ParseNpyHeader("{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (1,)}").status().message(),
            "a structured dtype is not supported; save a plain integer array");
}

TEST(NpyHeaderTest, MalformedTextSaysWhatWasExpectedAndWhere) {
  EXPECT_EQ(ParseNpyHeader("[]").status().message(), "malformed NPY header: expected '{' at byte 0, at '[]'");
  EXPECT_EQ(ParseNpyHeader("{'descr' '<i4'}").status().message(),
            "malformed NPY header: expected ':' at byte 9, at ''<i4'}'");
  EXPECT_EQ(ParseNpyHeader("{'descr': '<i4").status().message(),
            "malformed NPY header: expected a closing quote at byte 10, at ''<i4'");
  EXPECT_EQ(ParseNpyHeader("{'fortran_order': false}").status().message(),
            "malformed NPY header: expected True or False at byte 18, at 'false}'");
  EXPECT_EQ(ParseNpyHeader("{'shape': (1, -2)}").status().message(),
            "malformed NPY header: expected a dimension at byte 14, at '-2)}'");
  EXPECT_EQ(ParseNpyHeader("{'shape': (1 2)}").status().message(),
            "malformed NPY header: expected ',' or ')' at byte 13, at '2)}'");
  EXPECT_EQ(ParseNpyHeader("{'shape': (1,) 'descr'").status().message(),
            "malformed NPY header: expected ',' or '}' at byte 15, at ''descr''");
  EXPECT_EQ(ParseNpyHeader("{5: 1}").status().message(),
            "malformed NPY header: expected a quoted string at byte 1, at '5: 1}'");
}

TEST(NpyHeaderTest, ErrorsQuoteAShortPrefixOfTheRest) {
  const std::string message(ParseNpyHeader("{'shape': 1" + std::string(1000, 'x') + "}").status().message());
  EXPECT_EQ(message, "malformed NPY header: expected '(' at byte 10, at '1" + std::string(39, 'x') + "...'");
}

// ---------------------------------------------------------------------------------------------
// Dtypes and elements.

TEST(NpyDtypeTest, EveryLittleEndianIntegerType) {
  const struct {
    const char* descr;
    int bytes;
    bool is_signed;
  } kCases[] = {{"|i1", 1, true},  {"<i1", 1, true}, {"|u1", 1, false}, {"<u1", 1, false}, {"<i2", 2, true},
                {"<u2", 2, false}, {"<i4", 4, true}, {"<u4", 4, false}, {"<i8", 8, true},  {"<u8", 8, false}};
  for (const auto& c : kCases) {
    const auto type = ParseNpyDtype(c.descr);
    ASSERT_TRUE(type.ok()) << c.descr;
    EXPECT_EQ(type->bytes, c.bytes) << c.descr;
    EXPECT_EQ(type->is_signed, c.is_signed) << c.descr;
  }
}

TEST(NpyDtypeTest, BigEndianSaysHowToConvert) {
  EXPECT_EQ(ParseNpyDtype(">i8").status().message(),
            "dtype '>i8' is big-endian; save it little-endian (a.astype('<i8'))");
  EXPECT_EQ(ParseNpyDtype(">u2").status().message(),
            "dtype '>u2' is big-endian; save it little-endian (a.astype('<u2'))");
}

TEST(NpyDtypeTest, RefusesEverythingElse) {
  for (const char* descr : {"<f4", "<f8", "|b1", "<i16", "i4", "<c8", "|S3", ""}) {
    EXPECT_EQ(ParseNpyDtype(descr).status().message(),
              std::string("dtype '") + descr + "' is not an integer type (use int32/int64)");
  }
}

TEST(NpyElementsTest, ReadsLittleEndianBytes) {
  const std::string bytes("\x01\x02\x03\x04\x05\x06\x07\x88", 8);
  EXPECT_EQ(ReadLittleEndian(Bytes(bytes), 1), 0x01u);
  EXPECT_EQ(ReadLittleEndian(Bytes(bytes), 2), 0x0201u);
  EXPECT_EQ(ReadLittleEndian(Bytes(bytes), 4), 0x04030201u);
  EXPECT_EQ(ReadLittleEndian(Bytes(bytes), 8), 0x8807060504030201u);
}

TEST(NpyElementsTest, SignedTypesAreSignExtended) {
  const std::string minus_two("\xfe\xff\xff\xff\xff\xff\xff\xff", 8);
  for (int bytes : {1, 2, 4, 8}) {
    EXPECT_EQ(static_cast<int64_t>(DecodeNpyInteger(Bytes(minus_two), {bytes, true})), -2) << bytes;
  }
  EXPECT_EQ(DecodeNpyInteger(Bytes(minus_two), {1, false}), 0xfeu);
  EXPECT_EQ(DecodeNpyInteger(Bytes(minus_two), {4, false}), 0xfffffffeu);
  EXPECT_EQ(DecodeNpyInteger(Bytes(std::string("\x7f", 1)), {1, true}), 127u);
}

TEST(NpyElementsTest, ShapesAndIndicesAsNumpyPrintsThem) {
  EXPECT_EQ(NpyShapeString({}), "()");
  EXPECT_EQ(NpyShapeString({7}), "(7,)");
  EXPECT_EQ(NpyShapeString({2, 3, 4}), "(2, 3, 4)");
  EXPECT_EQ(NpyElementIndex(0, {2, 3, 4}), "[0, 0, 0]");
  EXPECT_EQ(NpyElementIndex(1 * 12 + 2 * 4 + 3, {2, 3, 4}), "[1, 2, 3]");
  EXPECT_EQ(NpyElementIndex(5, {7}), "[5]");
}

// ---------------------------------------------------------------------------------------------
// Writing.

TEST(NpyWriterTest, PreambleIsVersionOneAlignedToSixtyFourBytes) {
  const std::string p = NpyInt64Preamble({5, 16, 128});
  ASSERT_EQ(p.size() % 64, 0u);
  EXPECT_EQ(NpyHeaderLengthBytes(p.substr(0, 8)).value(), 2);
  EXPECT_EQ(ReadLittleEndian(Bytes(p) + 8, 2), p.size() - 10);
  EXPECT_EQ(p.back(), '\n');
  EXPECT_THAT(p.substr(10), StartsWith("{'descr': '<i8', 'fortran_order': False, 'shape': (5, 16, 128), }"));
  const auto header = ParseNpyHeader(p.substr(10));
  ASSERT_TRUE(header.ok()) << header.status();
  EXPECT_EQ(header->shape, (std::vector<int64_t>{5, 16, 128}));
}

TEST(NpyWriterTest, AHeaderTooLongForVersionOneIsWrittenAsVersionTwo) {
  const std::vector<int64_t> shape(25000, 1);  // "1, " 25,000 times: over 65,535 bytes
  const std::string p = NpyInt64Preamble(shape);
  ASSERT_EQ(p.size() % 64, 0u);
  EXPECT_EQ(NpyHeaderLengthBytes(p.substr(0, 8)).value(), 4);
  EXPECT_EQ(ReadLittleEndian(Bytes(p) + 8, 4), p.size() - 12);
  const auto header = ParseNpyHeader(p.substr(12));
  ASSERT_TRUE(header.ok()) << header.status();
  EXPECT_EQ(header->shape, shape);
}

TEST(NpyWriterTest, DataIsLittleEndianInt64) {
  std::string out = "x";
  AppendLittleEndian(out, std::vector<int64_t>{1, -2, int64_t{1} << 40});
  ASSERT_EQ(out.size(), 25u);
  EXPECT_EQ(out.substr(1, 8), std::string("\x01\0\0\0\0\0\0\0", 8));
  EXPECT_EQ(static_cast<int64_t>(ReadLittleEndian(Bytes(out) + 9, 8)), -2);
  EXPECT_EQ(ReadLittleEndian(Bytes(out) + 17, 8), uint64_t{1} << 40);
}

}  // namespace
}  // namespace taot::sim
