// What the command lines share about their flags and exits: flag range checks (a value out of
// range, NaN and the infinities included, fails the parse with a message naming the flag), the
// exit codes (0 done, 1 failed, 2 bad input), and a last line of defence against exceptions.
#pragma once

#include <cmath>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <new>
#include <string>

#include <CLI/CLI.hpp>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace taot::cli {

// Integers as integers ("4096", not "4096.000000"); others as %g.
inline std::string FormatBound(double v) {
  if (v == std::floor(v) && std::abs(v) < 1e18) return absl::StrCat(static_cast<int64_t>(v));
  return absl::StrCat(v);
}

// A number in [lo, hi], for flags of any numeric type (text that is no number is left to CLI11's
// own conversion, which names the flag too). `range` replaces "[lo, hi]" in messages when set.
inline CLI::Validator InRange(double lo, double hi, std::string range = "") {
  if (range.empty()) range = absl::StrCat("[", FormatBound(lo), ", ", FormatBound(hi), "]");
  return CLI::Validator(
      [lo, hi, range](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (end == text.c_str() || *end != '\0') return "";
        if (v >= lo && v <= hi) return "";  // false for NaN
        return absl::StrCat("must be in ", range, ", got ", text.substr(0, 40));
      },
      absl::StrCat("in ", range));
}

// Imbalance flags take either unit, the unit written: "70%" is a percentage; a bare number is in
// the flag's own unit (a fraction for initial imbalances, percent for targets). The transform
// rewrites "N%" into the flag's unit before the range check sees it.
enum class ImbalanceUnit { kFraction, kPercent };
inline CLI::Validator PercentAccepted(ImbalanceUnit unit) {
  return CLI::Validator(
      [unit](std::string& text) -> std::string {
        if (text.empty() || text.back() != '%') return "";
        const std::string number = text.substr(0, text.size() - 1);
        char* end = nullptr;
        const double v = std::strtod(number.c_str(), &end);
        if (number.empty() || end != number.c_str() + number.size()) {
          return absl::StrCat("must be a number, or a percentage like 70%, got ", text.substr(0, 40));
        }
        text = absl::StrFormat("%.17g", unit == ImbalanceUnit::kFraction ? v / 100 : v);
        return "";
      },
      unit == ImbalanceUnit::kFraction ? "a fraction (0.7) or a percentage (70%)" : "in percent (2 or 2%)");
}

// 2 when the input was at fault (a flag, a file's content, a file that cannot be opened or is too
// large), 1 for a failure of the command itself.
inline int ExitCodeOf(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return 0;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kAlreadyExists:
      return 2;
    default:
      return 1;
  }
}

// Runs `body` (the whole command), turning an exception that no check could prevent (memory
// running out while planning a case within every limit) into one error line and exit code 1
// instead of an abort.
template <typename Body>
int ExitOnException(const char* program, Body body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    std::cerr << program << ": error: out of memory\n";
  } catch (const std::exception& e) {
    std::cerr << program << ": error: " << std::string(e.what()).substr(0, 200) << "\n";
  }
  return 1;
}

}  // namespace taot::cli
