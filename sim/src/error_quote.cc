#include "error_quote.h"

namespace taot::sim {

std::string QuoteForError(std::string_view text) {
  constexpr size_t kQuotedBytes = 40;
  if (text.size() <= kQuotedBytes) return std::string(text);
  return std::string(text.substr(0, kQuotedBytes)) + "...";
}

}  // namespace taot::sim
