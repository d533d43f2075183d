#include "taot/wire/load_wire.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace taot::wire {

std::span<const int64_t> RowFromProto(const CountsProto& counts) {
  return {counts.data(), static_cast<size_t>(counts.size())};
}

void RowToProto(std::span<const int64_t> row, CountsProto& out) { out.Add(row.begin(), row.end()); }

void MatrixToProto(const LoadMatrix& load, taot::v1::ReportMatrixRequest& out) {
  out.set_ranks(load.sources());
  out.set_experts(load.experts());
  RowToProto(load.data(), *out.mutable_counts());
}

absl::StatusOr<LoadMatrix> MatrixFromProto(const taot::v1::ReportMatrixRequest& request) {
  const int64_t ranks = request.ranks(), experts = request.experts();
  if (ranks <= 0 || experts <= 0 || ranks * experts != request.counts_size()) {
    return absl::InvalidArgumentError(absl::StrCat("counts: must hold ranks x experts = ", ranks, " x ", experts,
                                                   " entries, got ", request.counts_size()));
  }
  LoadMatrix load(static_cast<int>(ranks), static_cast<int>(experts));
  for (int s = 0; s < ranks; ++s) {
    std::copy_n(request.counts().begin() + s * experts, experts, load.row(s).begin());
  }
  return load;
}

}  // namespace taot::wire
