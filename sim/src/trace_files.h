// Where a trace's layer files are: their names (layer_000.csv, layer_001.npy, ...), finding them
// in a trace directory or taking the one file a user names, and preparing a directory to write
// one into.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "taot/sim/trace.h"

namespace taot::sim {

struct LayerFile {
  int index = 0;
  TraceFormat format = TraceFormat::kCsv;
  std::filesystem::path path;
  std::string name;  // as errors show it: the directory the user gave joined with the file name
};

// The format a file's extension names, ".csv" or ".npy", or nothing.
std::optional<TraceFormat> TraceFormatOfExtension(const std::filesystem::path& path);

// A name that looks meant as a layer file: "layer_" and a trace extension. Other files (a README,
// the trainer's config) may sit beside the layers.
bool LooksLikeLayerFile(const std::string& filename);

// The layer index of "layer_007.csv", or nothing unless the digits are exactly three. Only for a
// name LooksLikeLayerFile accepts.
std::optional<int> LayerIndexOfFileName(const std::string& filename);

// The layer files of the trace directory `path`, by layer index: one format, numbered from 000
// without a gap, at least one (NotFound when there is none or no such path). A `path` that is a
// file is a one-layer trace when it ends in .csv or .npy, whatever its name.
absl::StatusOr<std::vector<LayerFile>> FindLayerFiles(const std::string& path);

// Creates `directory` if needed and refuses one that is a file or already holds any layer file
// (AlreadyExists, naming the first), so that writing a trace overwrites no recorded data.
absl::Status PrepareTraceDirectory(const std::string& directory);

}  // namespace taot::sim
