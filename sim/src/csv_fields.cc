#include "csv_fields.h"

#include <algorithm>
#include <charconv>
#include <climits>
#include <system_error>

namespace taot::sim {

std::string_view TrimCsvBlanks(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> SplitCsvLine(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t start = 0;
  while (true) {
    const size_t comma = line.find(',', start);
    const size_t length = comma == std::string_view::npos ? comma : comma - start;
    fields.push_back(TrimCsvBlanks(line.substr(start, length)));
    if (comma == std::string_view::npos) return fields;
    start = comma + 1;
  }
}

std::optional<int64_t> ParseCsvNonNegative(std::string_view field) {
  if (field.empty() || !std::all_of(field.begin(), field.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  int64_t v = 0;
  const auto [ptr, err] = std::from_chars(field.data(), field.data() + field.size(), v);
  if (err == std::errc::result_out_of_range) return INT64_MAX;
  return v;
}

}  // namespace taot::sim
