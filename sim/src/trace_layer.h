// One layer file of a trace as the readers hold it, and the rules every format checks on it, so
// that a CSV and an NPY layer are refused for the same reasons in the same words.
#pragma once

#include <climits>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "taot/planner/load_matrix.h"

namespace taot::sim {

// Steps, microbatches and ranks read from a file are held to this: WorkloadShape and LoadMatrix
// index with int.
inline constexpr int64_t kMaxTraceDim = INT_MAX;

struct TraceDims {
  int steps = 0;
  int microbatches = 1;
  int ranks = 0;
  int experts = 0;
  bool operator==(const TraceDims&) const = default;
};

struct TraceLayer {
  TraceDims dims;
  std::vector<LoadMatrix> matrices;  // [step * microbatches + microbatch]
};

// A layer of `dims` with every count 0, for a reader to fill in.
TraceLayer EmptyTraceLayer(const TraceDims& dims);

// As a user would see it from numpy: (S, R, E), or (S, M, R, E) with microbatches.
std::string TraceDimsString(const TraceDims& dims);

// "NAME: message" as InvalidArgument: how every reader reports malformed content.
absl::Status LayerFileError(absl::string_view name, absl::string_view message);

// Why `count` cannot be a routed token count, or nothing when it can.
std::optional<std::string> CountProblem(int64_t count);

// Why `matrix` cannot be a planner's load (its total over kMaxTotalTokens), or nothing.
std::optional<std::string> TotalProblem(const LoadMatrix& matrix);

// The request limits (plan_request.h) on one R x E matrix, checked before a layer is allocated,
// since every matrix becomes a planner's request.
absl::Status CheckMatrixSize(const TraceDims& dims);

// What no format's syntax catches: experts a multiple of ranks, every matrix's total in range.
// Errors start with `name`.
absl::Status CheckTraceLayer(const TraceLayer& layer, const std::string& name);

}  // namespace taot::sim
