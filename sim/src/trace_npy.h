// A trace's layer file in numpy's format: integers of shape (S, R, E), or (S, M, R, E) with
// microbatches, read into a TraceLayer and written from a workload's matrices.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "taot/planner/load_matrix.h"
#include "taot/sim/workload.h"
#include "trace_layer.h"

namespace taot::sim {

// Reads the NPY file at `path`; errors (NotFound when it cannot be opened, InvalidArgument for
// malformed content) start with `name` and give the element index of a bad count. The shape is
// held to the request limits before anything is allocated.
absl::StatusOr<TraceLayer> ReadNpyTraceLayer(const std::filesystem::path& path, const std::string& name);

// numpy's shape as trace dimensions: (S, R, E) or (S, M, R, E), none zero, each at most
// kMaxTraceDim, R x E within the request limits.
absl::StatusOr<TraceDims> TraceDimsOfNpyShape(const std::vector<int64_t>& shape);

// The preamble of a layer of `shape` as int64: (S, M, R, E) when M > 1, else (S, R, E). The
// matrices follow it in (step, microbatch) order, each appended by AppendNpyTraceMatrix.
std::string NpyTraceLayerPreamble(const WorkloadShape& shape);
void AppendNpyTraceMatrix(std::string& out, const LoadMatrix& matrix);

}  // namespace taot::sim
