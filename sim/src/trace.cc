// The trace as a workload: ReadTrace and WriteTrace over the layer files (trace_files.h) in
// either format (trace_csv.h, trace_npy.h).
#include "taot/sim/trace.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "trace_csv.h"
#include "trace_files.h"
#include "trace_layer.h"
#include "trace_npy.h"

namespace taot::sim {
namespace {

namespace fs = std::filesystem;

constexpr int kMaxLayers = 1000;  // the file names have three digits

class TraceWorkload final : public Workload {
 public:
  TraceWorkload(WorkloadShape shape, std::vector<LoadMatrix> matrices)
      : shape_(shape), matrices_(std::move(matrices)) {}

  WorkloadShape shape() const override { return shape_; }

  LoadMatrix Load(int step, int layer, int microbatch) const override {
    const size_t index = (static_cast<size_t>(layer) * shape_.steps + step) * shape_.microbatches + microbatch;
    return matrices_.at(index);
  }

 private:
  WorkloadShape shape_;
  std::vector<LoadMatrix> matrices_;  // [(layer * steps + step) * microbatches + microbatch]
};

absl::StatusOr<TraceLayer> ReadLayer(const LayerFile& file) {
  absl::StatusOr<TraceLayer> layer = file.format == TraceFormat::kNpy ? ReadNpyTraceLayer(file.path, file.name)
                                                                      : ReadCsvTraceLayer(file.path, file.name);
  if (!layer.ok()) return layer;
  if (absl::Status s = CheckTraceLayer(*layer, file.name); !s.ok()) return s;
  return layer;
}

absl::Status CheckWorkloadShape(const WorkloadShape& s) {
  auto bad = [](const std::string& what) { return absl::InvalidArgumentError(absl::StrCat("workload shape: ", what)); };
  if (s.layers < 1 || s.layers > kMaxLayers) {
    return bad(absl::StrCat("layers must be in [1, ", kMaxLayers, "] (three-digit file names), got ", s.layers));
  }
  if (s.steps < 1) return bad(absl::StrCat("steps must be at least 1, got ", s.steps));
  if (s.microbatches < 1) return bad(absl::StrCat("microbatches must be at least 1, got ", s.microbatches));
  if (s.ranks < 1) return bad(absl::StrCat("ranks must be at least 1, got ", s.ranks));
  if (s.experts < 1 || s.experts % s.ranks != 0) {
    return bad(absl::StrCat("experts must be a positive multiple of ranks (", s.ranks, "), got ", s.experts));
  }
  return absl::OkStatus();
}

// A matrix the reader would accept back, so a written trace is always a readable one.
absl::Status CheckMatrix(const LoadMatrix& m, const WorkloadShape& s, int step, int layer, int mb) {
  const std::string where = absl::StrCat("workload: step ", step, ", layer ", layer, ", microbatch ", mb);
  if (m.sources() != s.ranks || m.experts() != s.experts) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": Load returned ", m.sources(), " x ", m.experts(),
                                                   ", the shape says ", s.ranks, " x ", s.experts));
  }
  for (int r = 0; r < m.sources(); ++r) {
    for (int e = 0; e < m.experts(); ++e) {
      if (auto problem = CountProblem(m.at(r, e))) {
        return absl::InvalidArgumentError(absl::StrCat(where, ": rank ", r, ", expert ", e, ": ", *problem));
      }
    }
  }
  if (auto problem = TotalProblem(m)) return absl::InvalidArgumentError(absl::StrCat(where, ": ", *problem));
  return absl::OkStatus();
}

// One matrix at a time, so that writing costs one matrix's text, not the layer's.
absl::Status WriteLayer(const Workload& workload, int layer, TraceFormat format, const fs::path& path) {
  const WorkloadShape s = workload.shape();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    return absl::PermissionDeniedError(absl::StrCat(path.string(), ": cannot create: ", std::strerror(errno)));
  }
  std::string buffer = format == TraceFormat::kNpy ? NpyTraceLayerPreamble(s) : CsvTraceLayerHeader(s);
  for (int step = 0; step < s.steps; ++step) {
    for (int mb = 0; mb < s.microbatches; ++mb) {
      const LoadMatrix m = workload.Load(step, layer, mb);
      if (absl::Status st = CheckMatrix(m, s, step, layer, mb); !st.ok()) return st;
      if (format == TraceFormat::kNpy)
        AppendNpyTraceMatrix(buffer, m);
      else
        AppendCsvTraceRows(buffer, m, s, step, mb);
      out.write(buffer.data(), static_cast<std::streamsize>(buffer.size()));
      buffer.clear();
    }
  }
  out.close();
  if (!out) return absl::DataLossError(absl::StrCat(path.string(), ": write failed"));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Workload>> ReadTrace(const std::string& path) {
  absl::StatusOr<std::vector<LayerFile>> files = FindLayerFiles(path);
  if (!files.ok()) return files.status();
  std::vector<LoadMatrix> matrices;
  TraceDims dims;
  for (const LayerFile& file : *files) {
    absl::StatusOr<TraceLayer> layer = ReadLayer(file);
    if (!layer.ok()) return layer.status();
    if (file.index == 0) {
      dims = layer->dims;
    } else if (layer->dims != dims) {
      return LayerFileError(file.name,
                            absl::StrCat("shape ", TraceDimsString(layer->dims), " differs from ",
                                         files->front().path.filename().string(), "'s ", TraceDimsString(dims),
                                         "; every layer needs the same steps, microbatches, ranks and experts"));
    }
    std::move(layer->matrices.begin(), layer->matrices.end(), std::back_inserter(matrices));
  }
  WorkloadShape shape;
  shape.ranks = dims.ranks;
  shape.experts = dims.experts;
  shape.layers = static_cast<int>(files->size());
  shape.steps = dims.steps;
  shape.microbatches = dims.microbatches;
  return std::make_unique<TraceWorkload>(shape, std::move(matrices));
}

absl::Status WriteTrace(const Workload& workload, const std::string& directory, TraceFormat format) {
  const WorkloadShape shape = workload.shape();
  if (absl::Status s = CheckWorkloadShape(shape); !s.ok()) return s;
  if (absl::Status s = PrepareTraceDirectory(directory); !s.ok()) return s;
  std::vector<fs::path> written;
  for (int layer = 0; layer < shape.layers; ++layer) {
    written.push_back(fs::path(directory) / TraceLayerFileName(layer, format));
    if (absl::Status s = WriteLayer(workload, layer, format, written.back()); !s.ok()) {
      // A partial trace would read as a shorter, valid one; leave nothing behind instead.
      std::error_code ec;
      for (const fs::path& p : written) fs::remove(p, ec);
      return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace taot::sim
