// Load on the wire: one rank's row of tokens per expert (ReportLoadRequest, a Stream's
// LayerLoad) and the whole ranks x experts matrix (ReportMatrixRequest).
#pragma once

#include <cstdint>
#include <span>

#include "absl/status/statusor.h"
#include "taot/planner/load_matrix.h"
#include "taot/v1/planner.pb.h"

namespace taot::wire {

using CountsProto = google::protobuf::RepeatedField<int64_t>;

// A view of the message's counts, without copying them; the round that takes the row checks
// its length and values against the job.
std::span<const int64_t> RowFromProto(const CountsProto& counts);
void RowToProto(std::span<const int64_t> row, CountsProto& out);

// Sets ranks, experts and the row-major counts.
void MatrixToProto(const LoadMatrix& load, taot::v1::ReportMatrixRequest& out);
// The counts must hold ranks x experts entries (INVALID_ARGUMENT naming `counts` otherwise).
absl::StatusOr<LoadMatrix> MatrixFromProto(const taot::v1::ReportMatrixRequest& request);

}  // namespace taot::wire
