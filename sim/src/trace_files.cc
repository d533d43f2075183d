#include "trace_files.h"

#include <algorithm>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace taot::sim {
namespace {

namespace fs = std::filesystem;

// The names in `directory` that LooksLikeLayerFile accepts, in the order the listing gives them.
absl::StatusOr<std::vector<std::string>> LayerLikeFileNames(const std::string& directory) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(directory, ec), end; !ec && it != end; it.increment(ec)) {
    std::string filename = it->path().filename().string();
    if (LooksLikeLayerFile(filename)) names.push_back(std::move(filename));
  }
  if (ec) return absl::NotFoundError(absl::StrCat(directory, ": cannot list: ", ec.message()));
  return names;
}

absl::StatusOr<std::vector<LayerFile>> ListLayerFiles(const std::string& directory) {
  absl::StatusOr<std::vector<std::string>> names = LayerLikeFileNames(directory);
  if (!names.ok()) return names.status();
  std::vector<LayerFile> files;
  for (const std::string& filename : *names) {
    const fs::path path = fs::path(directory) / filename;
    const std::optional<int> index = LayerIndexOfFileName(filename);
    if (!index) {
      return absl::InvalidArgumentError(
          absl::StrCat(path.string(),
                       ": layer files are named layer_NNN.csv or layer_NNN.npy (three digits, "
                       "zero-padded, from layer_000)"));
    }
    files.push_back({*index, *TraceFormatOfExtension(filename), path, path.string()});
  }
  std::sort(files.begin(), files.end(), [](const LayerFile& a, const LayerFile& b) {
    return std::pair(a.index, a.format) < std::pair(b.index, b.format);
  });
  return files;
}

absl::Status CheckLayerFiles(const std::string& directory, const std::vector<LayerFile>& files) {
  if (files.empty()) {
    return absl::NotFoundError(absl::StrCat(directory,
                                            ": no layer files (a trace holds layer_000.csv, layer_001.csv, ... or "
                                            "layer_000.npy, layer_001.npy, ...)"));
  }
  for (const LayerFile& f : files) {
    if (f.format != files.front().format) {
      return absl::InvalidArgumentError(
          absl::StrCat(directory, ": mixes formats (", files.front().path.filename().string(), " and ",
                       f.path.filename().string(), "); every layer file must be CSV or every one NPY"));
    }
  }
  for (size_t i = 0; i < files.size(); ++i) {
    if (files[i].index != static_cast<int>(i)) {
      return absl::InvalidArgumentError(
          absl::StrCat(directory, ": ", TraceLayerFileName(static_cast<int>(i), files[i].format),
                       " is missing (layer files are numbered consecutively from layer_000; found ",
                       files[i].path.filename().string(), ")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::string TraceLayerFileName(int layer, TraceFormat format) {
  return absl::StrFormat("layer_%03d.%s", layer, format == TraceFormat::kNpy ? "npy" : "csv");
}

std::optional<TraceFormat> TraceFormatOfExtension(const fs::path& path) {
  const std::string ext = path.extension().string();
  if (ext == ".csv") return TraceFormat::kCsv;
  if (ext == ".npy") return TraceFormat::kNpy;
  return std::nullopt;
}

bool LooksLikeLayerFile(const std::string& filename) {
  return filename.starts_with("layer_") && TraceFormatOfExtension(filename).has_value();
}

std::optional<int> LayerIndexOfFileName(const std::string& filename) {
  const std::string digits = fs::path(filename).stem().string().substr(6);
  if (digits.size() != 3 || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  return std::stoi(digits);
}

absl::StatusOr<std::vector<LayerFile>> FindLayerFiles(const std::string& path) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (!fs::exists(status)) {
    return absl::NotFoundError(absl::StrCat(path, ": no such trace directory or file"));
  }
  if (!fs::is_directory(status)) {
    const std::optional<TraceFormat> format = TraceFormatOfExtension(path);
    if (!format) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": a trace file must end in .csv or .npy"));
    }
    return std::vector<LayerFile>{{0, *format, fs::path(path), path}};
  }
  absl::StatusOr<std::vector<LayerFile>> files = ListLayerFiles(path);
  if (!files.ok()) return files.status();
  if (absl::Status s = CheckLayerFiles(path, *files); !s.ok()) return s;
  return files;
}

absl::Status PrepareTraceDirectory(const std::string& directory) {
  std::error_code ec;
  fs::create_directories(directory, ec);
  if (ec || !fs::is_directory(directory, ec)) {
    return absl::InvalidArgumentError(
        absl::StrCat(directory, ": cannot create the trace directory",
                     ec ? absl::StrCat(": ", ec.message()) : std::string(" (a file of that name exists)")));
  }
  absl::StatusOr<std::vector<std::string>> existing = LayerLikeFileNames(directory);
  if (!existing.ok()) return existing.status();
  if (existing->empty()) return absl::OkStatus();
  const std::string first = *std::min_element(existing->begin(), existing->end());
  return absl::AlreadyExistsError(absl::StrCat((fs::path(directory) / first).string(),
                                               " already exists; WriteTrace does not overwrite a "
                                               "trace (write to a new or empty directory)"));
}

}  // namespace taot::sim
