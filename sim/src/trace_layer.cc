#include "trace_layer.h"

#include "absl/strings/str_cat.h"
#include "taot/planner/plan_request.h"

namespace taot::sim {
namespace {

std::string StepName(int step, int microbatch, const TraceDims& d) {
  if (d.microbatches == 1) return absl::StrCat("step ", step);
  return absl::StrCat("step ", step, ", microbatch ", microbatch);
}

}  // namespace

TraceLayer EmptyTraceLayer(const TraceDims& dims) {
  TraceLayer layer;
  layer.dims = dims;
  layer.matrices.assign(static_cast<size_t>(dims.steps) * dims.microbatches, LoadMatrix(dims.ranks, dims.experts));
  return layer;
}

std::string TraceDimsString(const TraceDims& d) {
  if (d.microbatches == 1) return absl::StrCat("(", d.steps, ", ", d.ranks, ", ", d.experts, ")");
  return absl::StrCat("(", d.steps, ", ", d.microbatches, ", ", d.ranks, ", ", d.experts, ")");
}

absl::Status LayerFileError(absl::string_view name, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(name, ": ", message));
}

std::optional<std::string> CountProblem(int64_t count) {
  if (count >= 0 && count <= kMaxTokensPerEntry) return std::nullopt;
  return absl::StrCat("must be an integer in [0, 2^40], got ", count);
}

// The planners need every matrix's total within kMaxTotalTokens (ValidateRequest); say so here,
// where the user can still tell which step it was, rather than later in the simulator.
std::optional<std::string> TotalProblem(const LoadMatrix& matrix) {
  int64_t total = 0;
  for (int64_t c : matrix.data()) {
    total += c;  // every entry is at most 2^40, so stopping past 2^52 cannot overflow
    if (total > kMaxTotalTokens) {
      return absl::StrCat("holds more than 2^52 (", kMaxTotalTokens, ") tokens in total");
    }
  }
  return std::nullopt;
}

absl::Status CheckMatrixSize(const TraceDims& dims) {
  return CheckRequestSize(dims.ranks, dims.experts, "ranks", "experts");
}

absl::Status CheckTraceLayer(const TraceLayer& layer, const std::string& name) {
  const TraceDims& d = layer.dims;
  if (d.experts % d.ranks != 0) {
    return LayerFileError(name, absl::StrCat(d.experts, " experts is not a multiple of ", d.ranks,
                                             " ranks (every rank is home to experts / ranks of them)"));
  }
  for (int s = 0; s < d.steps; ++s) {
    for (int m = 0; m < d.microbatches; ++m) {
      const LoadMatrix& matrix = layer.matrices[static_cast<size_t>(s) * d.microbatches + m];
      if (auto problem = TotalProblem(matrix)) {
        return LayerFileError(name, absl::StrCat(StepName(s, m, d), ": ", *problem));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace taot::sim
