#include "planners/params.h"

#include <charconv>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace taot::planners {

void ParamReader::Fail(const std::string& key, const std::string& what, const std::string& value) {
  if (!status_.ok()) return;
  status_ = absl::InvalidArgumentError(
      absl::StrCat("planner ", planner_, ": parameter ", key, ": must be ", what, ", got '", value, "'"));
}

double ParamReader::Double(const std::string& key, double fallback, double min, double max) {
  known_.insert(key);
  auto it = params_.find(key);
  if (it == params_.end()) return fallback;
  const std::string& text = it->second;
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value) || value < min || value > max) {
    Fail(key, absl::StrCat("a number in [", min, ", ", max, "]"), text);
    return fallback;
  }
  return value;
}

std::string ParamReader::String(const std::string& key, const std::string& fallback) {
  known_.insert(key);
  auto it = params_.find(key);
  return it == params_.end() ? fallback : it->second;
}

int64_t ParamReader::Int(const std::string& key, int64_t fallback, int64_t min, int64_t max) {
  known_.insert(key);
  auto it = params_.find(key);
  if (it == params_.end()) return fallback;
  const std::string& text = it->second;
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < min || value > max) {
    Fail(key, absl::StrCat("an integer in [", min, ", ", max, "]"), text);
    return fallback;
  }
  return value;
}

absl::Status ParamReader::Finish() const {
  if (!status_.ok()) return status_;
  for (const auto& [key, value] : params_) {
    if (!known_.contains(key)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "planner ", planner_, ": unknown parameter '", key, "'",
          known_.empty() ? " (it takes none)" : absl::StrCat(" (known: ", absl::StrJoin(known_, ", "), ")")));
    }
  }
  return absl::OkStatus();
}

}  // namespace taot::planners
