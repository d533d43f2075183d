// A trace's layer file as CSV: a header `step,[microbatch,]rank,e0,e1,...`, then one row of
// counts per (step, [microbatch,] rank) in any order; '#' comments and blank lines are skipped.
// Read into a TraceLayer and written from a workload's matrices.
#pragma once

#include <filesystem>
#include <string>

#include "absl/status/statusor.h"
#include "taot/planner/load_matrix.h"
#include "taot/sim/workload.h"
#include "trace_layer.h"

namespace taot::sim {

// Reads the CSV file at `path`; errors (NotFound when it cannot be opened, InvalidArgument for
// malformed content) start with `name` and, where one line is at fault, its line number.
// Every (step, [microbatch,] rank) up to the largest seen must appear exactly once.
absl::StatusOr<TraceLayer> ReadCsvTraceLayer(const std::filesystem::path& path, const std::string& name);

// The header line of a layer of `shape`, with a microbatch column only when M > 1; the rows
// follow it in (step, microbatch) order, each matrix's appended by AppendCsvTraceRows.
std::string CsvTraceLayerHeader(const WorkloadShape& shape);
void AppendCsvTraceRows(std::string& out, const LoadMatrix& matrix, const WorkloadShape& shape, int step,
                        int microbatch);

}  // namespace taot::sim
