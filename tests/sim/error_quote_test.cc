#include "error_quote.h"

#include <gtest/gtest.h>

#include <string>

namespace taot::sim {
namespace {

TEST(QuoteForErrorTest, KeepsShortTextWhole) {
  EXPECT_EQ(QuoteForError(""), "");
  EXPECT_EQ(QuoteForError("1.5"), "1.5");
  const std::string forty(40, 'x');
  EXPECT_EQ(QuoteForError(forty), forty);
}

TEST(QuoteForErrorTest, CutsLongTextAfterFortyBytesAndSaysSo) {
  const std::string text = std::string(40, 'a') + "b" + std::string(100000, 'c');
  EXPECT_EQ(QuoteForError(text), std::string(40, 'a') + "...");
}

}  // namespace
}  // namespace taot::sim
