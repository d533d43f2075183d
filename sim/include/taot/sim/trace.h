// Recorded routing traces as a simulator workload, so users can replay their own trainer's
// routing logs instead of synthetic sequences. The file format is in docs/formats.md ("Traces").
//
// A trace is a directory with one file per MoE layer, `layer_000.csv` or `layer_000.npy`
// (3-digit, zero-padded, consecutive from 000, one format for all), each holding per-step R x E
// counts: NPY of shape (S, R, E) or (S, M, R, E), or CSV rows `step[,microbatch],rank,e0,...`.
#pragma once

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "taot/sim/workload.h"

namespace taot::sim {

enum class TraceFormat { kCsv, kNpy };

// Reads a trace directory, or a single layer file (a one-layer trace). The whole trace is held
// in memory; Load() returns a copy. Every layer must agree on steps, microbatches, ranks and
// experts; experts must be a positive multiple of ranks; every count must be in
// [0, kMaxTokensPerEntry] and every matrix's total at most kMaxTotalTokens, so each matrix is a
// valid CASE load. Errors (NotFound for a missing path or no layer files, InvalidArgument for
// malformed content) name the file and the line (CSV) or element index (NPY), and the bad value.
absl::StatusOr<std::unique_ptr<Workload>> ReadTrace(const std::string& path);

// Writes `workload` as a trace that ReadTrace reads back unchanged: NPY as little-endian int64
// of shape (S, M, R, E) when M > 1, else (S, R, E); CSV with a microbatch column only when
// M > 1. Creates `directory` if needed and refuses, before writing anything, a directory that
// already holds any layer file (the error names it), so no recorded data is overwritten; on a
// later error it removes the files it wrote.
absl::Status WriteTrace(const Workload& workload, const std::string& directory, TraceFormat format);

// "layer_007.csv" / "layer_007.npy".
std::string TraceLayerFileName(int layer, TraceFormat format);

}  // namespace taot::sim
