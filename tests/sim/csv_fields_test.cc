#include "csv_fields.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string_view>
#include <vector>

namespace taot::sim {
namespace {

using Fields = std::vector<std::string_view>;

TEST(CsvFieldsTest, TrimsSpacesTabsAndATrailingCarriageReturn) {
  EXPECT_EQ(TrimCsvBlanks(" \t 12 \t\r"), "12");
  EXPECT_EQ(TrimCsvBlanks("a b"), "a b");
  EXPECT_EQ(TrimCsvBlanks(" \t\r"), "");
  EXPECT_EQ(TrimCsvBlanks(""), "");
  // Only a trailing '\r' is a line end; a leading one is content.
  EXPECT_EQ(TrimCsvBlanks("\r1"), "\r1");
}

TEST(CsvFieldsTest, SplitsAtEveryCommaAndTrimsEachField) {
  EXPECT_EQ(SplitCsvLine("step, rank ,\te0\r"), (Fields{"step", "rank", "e0"}));
  EXPECT_EQ(SplitCsvLine("1,,2,"), (Fields{"1", "", "2", ""}));
  EXPECT_EQ(SplitCsvLine(""), (Fields{""}));
  EXPECT_EQ(SplitCsvLine(","), (Fields{"", ""}));
}

TEST(CsvFieldsTest, QuotesAreNotSyntaxSoAQuotedCommaStillSplits) {
  EXPECT_EQ(SplitCsvLine("\"1,2\",3"), (Fields{"\"1", "2\"", "3"}));
}

TEST(CsvFieldsTest, NumbersArePlainDigits) {
  EXPECT_EQ(ParseCsvNonNegative("0"), 0);
  EXPECT_EQ(ParseCsvNonNegative("007"), 7);
  EXPECT_EQ(ParseCsvNonNegative("1099511627776"), int64_t{1} << 40);
  // Fields come trimmed from SplitCsvLine; a blank here is part of the field.
  for (std::string_view bad : {"", "-2", "+2", "1.5", "1e3", "0x10", "\"5\"", "5 6", " 5", "five"}) {
    EXPECT_FALSE(ParseCsvNonNegative(bad).has_value()) << bad;
  }
}

TEST(CsvFieldsTest, HugeNumbersSaturateSoTheyReadAsOutOfRange) {
  EXPECT_EQ(ParseCsvNonNegative("9223372036854775807"), INT64_MAX);
  EXPECT_EQ(ParseCsvNonNegative("9223372036854775808"), INT64_MAX);
  EXPECT_EQ(ParseCsvNonNegative(std::string(1000, '9')), INT64_MAX);
}

}  // namespace
}  // namespace taot::sim
