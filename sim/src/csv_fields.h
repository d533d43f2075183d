// The CSV dialect of traces, the one a trainer's logger or Python's csv module writes for
// integer tables: fields split at every comma (no quoting), surrounding spaces and tabs and a
// line's trailing '\r' ignored, numbers as plain decimal digits.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace taot::sim {

// `text` (a field or a whole line) without leading spaces and tabs, and without trailing
// spaces, tabs and '\r' (CRLF files read line by line keep the '\r').
std::string_view TrimCsvBlanks(std::string_view text);

// The trimmed fields of one line; an empty line is one empty field.
std::vector<std::string_view> SplitCsvLine(std::string_view line);

// A non-negative integer written as plain digits (no sign, no exponent, no quotes), or nothing.
// Saturates at INT64_MAX, so that a huge value reads as out of range rather than as malformed.
std::optional<int64_t> ParseCsvNonNegative(std::string_view field);

}  // namespace taot::sim
