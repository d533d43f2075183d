// Reads a planner's key=value parameters, so that every planner rejects unknown keys and bad
// values the same way: "planner echo: parameter min_chunk: must be an integer >= 1, got 'x'".
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "taot/planner/planner_params.h"

namespace taot::planners {

class ParamReader {
 public:
  ParamReader(std::string_view planner, const PlannerParams& params) : planner_(planner), params_(params) {}

  // Each getter records the key as known and returns the default when it is absent.
  double Double(const std::string& key, double fallback, double min, double max);
  int64_t Int(const std::string& key, int64_t fallback, int64_t min, int64_t max);
  // A string parameter (any value).
  std::string String(const std::string& key, const std::string& fallback);
  // Marks a key as accepted when the caller reads it itself.
  void Known(const std::string& key) { known_.insert(key); }
  // The first error met by a getter, or an error naming the first unknown key.
  absl::Status Finish() const;

 private:
  void Fail(const std::string& key, const std::string& what, const std::string& value);

  std::string planner_;
  const PlannerParams& params_;
  std::set<std::string> known_;
  absl::Status status_;
};

}  // namespace taot::planners
