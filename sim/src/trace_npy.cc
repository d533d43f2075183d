#include "trace_npy.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "npy_format.h"

namespace taot::sim {
namespace {

namespace fs = std::filesystem;

// One element as a count, or why it is not one.
absl::StatusOr<int64_t> DecodeCount(const unsigned char* p, NpyIntType type) {
  const uint64_t raw = DecodeNpyInteger(p, type);
  if (!type.is_signed) {
    if (raw > static_cast<uint64_t>(kMaxTokensPerEntry)) {
      return absl::InvalidArgumentError(absl::StrCat("must be an integer in [0, 2^40], got ", raw));
    }
    return static_cast<int64_t>(raw);
  }
  const auto value = static_cast<int64_t>(raw);
  if (auto problem = CountProblem(value)) return absl::InvalidArgumentError(*problem);
  return value;
}

class NpyTraceReader {
 public:
  NpyTraceReader(const fs::path& path, std::string name) : path_(path), name_(std::move(name)) {}

  absl::StatusOr<TraceLayer> Read() {
    in_.open(path_, std::ios::binary);
    std::error_code ec;
    size_ = fs::file_size(path_, ec);
    if (!in_ || ec) return absl::NotFoundError(absl::StrCat(name_, ": cannot open: ", std::strerror(errno)));
    absl::StatusOr<NpyHeader> header = ReadHeader();
    if (!header.ok()) return Error(header.status().message());
    if (header->fortran_order) {
      return Error("fortran_order is True; save a C-order array (np.ascontiguousarray(a))");
    }
    absl::StatusOr<NpyIntType> type = ParseNpyDtype(header->descr);
    if (!type.ok()) return Error(type.status().message());
    absl::StatusOr<TraceDims> dims = TraceDimsOfNpyShape(header->shape);
    if (!dims.ok()) return Error(dims.status().message());
    if (absl::Status s = CheckDataSize(*header, *type); !s.ok()) return s;
    return ReadData(*header, *type, *dims);
  }

 private:
  absl::Status Error(absl::string_view message) const { return LayerFileError(name_, message); }

  absl::StatusOr<NpyHeader> ReadHeader() {
    char preamble[12] = {};
    const uint64_t got = size_ < 10 ? 0 : ReadUpTo(preamble, 8);
    absl::StatusOr<int> length_bytes = NpyHeaderLengthBytes(std::string_view(preamble, got));
    if (!length_bytes.ok()) return length_bytes.status();
    if (ReadUpTo(preamble + 8, *length_bytes) != static_cast<uint64_t>(*length_bytes)) {
      return Truncated("header");
    }
    const uint64_t header_length =
        ReadLittleEndian(reinterpret_cast<const unsigned char*>(preamble + 8), *length_bytes);
    if (header_length > kMaxNpyHeaderBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("the NPY header of ", header_length, " bytes is more than the limit of ", kMaxNpyHeaderBytes));
    }
    data_offset_ = 8 + static_cast<uint64_t>(*length_bytes) + header_length;
    if (data_offset_ > size_) return Truncated("header");
    std::string text(static_cast<size_t>(header_length), '\0');
    if (ReadUpTo(text.data(), text.size()) != text.size()) return Truncated("header");
    return ParseNpyHeader(text);
  }

  absl::Status Truncated(const std::string& part) const {
    return absl::InvalidArgumentError(absl::StrCat("truncated in the ", part, " (", size_, " bytes)"));
  }

  absl::Status CheckDataSize(const NpyHeader& header, NpyIntType type) {
    elements_ = 1;
    uint64_t needed = 0;
    bool overflow = false;
    for (int64_t dim : header.shape) {
      overflow |= __builtin_mul_overflow(elements_, static_cast<uint64_t>(dim), &elements_);
    }
    overflow |= __builtin_mul_overflow(elements_, static_cast<uint64_t>(type.bytes), &needed);
    const uint64_t held = size_ - data_offset_;
    const std::string what = absl::StrCat("shape ", NpyShapeString(header.shape), " of '", header.descr, "'");
    if (overflow || needed > held) {
      return Error(absl::StrCat("truncated: ", what, " needs ",
                                overflow ? std::string("more than 2^64") : absl::StrCat(needed),
                                " data bytes, the file holds ", held));
    }
    if (needed < held) {
      return Error(absl::StrCat(held - needed, " bytes follow the data (", what, " needs ", needed,
                                "); is this an NPY file written by np.save?"));
    }
    return absl::OkStatus();
  }

  // Decodes in blocks, so that a layer costs its matrices and one block, not the file twice.
  absl::StatusOr<TraceLayer> ReadData(const NpyHeader& header, NpyIntType type, const TraceDims& dims) {
    TraceLayer layer = EmptyTraceLayer(dims);
    const uint64_t per_matrix = static_cast<uint64_t>(dims.ranks) * static_cast<uint64_t>(dims.experts);
    constexpr uint64_t kBlockElements = uint64_t{1} << 16;
    std::vector<unsigned char> block(static_cast<size_t>(kBlockElements) * type.bytes);
    for (uint64_t first = 0; first < elements_; first += kBlockElements) {
      const uint64_t n = std::min(kBlockElements, elements_ - first);
      const uint64_t bytes = n * static_cast<uint64_t>(type.bytes);
      if (ReadUpTo(block.data(), bytes) != bytes) {
        return Error(absl::StrCat("read failed at element ", NpyElementIndex(first, header.shape)));
      }
      for (uint64_t i = 0; i < n; ++i) {
        const uint64_t flat = first + i;
        absl::StatusOr<int64_t> count = DecodeCount(block.data() + i * type.bytes, type);
        if (!count.ok()) {
          return Error(absl::StrCat("element ", NpyElementIndex(flat, header.shape), ": ", count.status().message()));
        }
        const uint64_t within = flat % per_matrix;
        layer.matrices[flat / per_matrix].at(static_cast<int>(within / dims.experts),
                                             static_cast<int>(within % dims.experts)) = *count;
      }
    }
    return layer;
  }

  // How many of the next `n` bytes the file still held.
  template <typename Byte>
  uint64_t ReadUpTo(Byte* out, uint64_t n) {
    in_.read(reinterpret_cast<char*>(out), static_cast<std::streamsize>(n));
    return static_cast<uint64_t>(in_.gcount());
  }

  fs::path path_;
  std::string name_;
  std::ifstream in_;
  uint64_t size_ = 0;
  uint64_t data_offset_ = 0;
  uint64_t elements_ = 0;
};

}  // namespace

absl::StatusOr<TraceLayer> ReadNpyTraceLayer(const fs::path& path, const std::string& name) {
  return NpyTraceReader(path, name).Read();
}

absl::StatusOr<TraceDims> TraceDimsOfNpyShape(const std::vector<int64_t>& shape) {
  if (shape.size() != 3 && shape.size() != 4) {
    // A few dimensions are shown as numpy would; thousands would swamp the message.
    const std::string shown =
        shape.size() <= 8 ? NpyShapeString(shape) : absl::StrCat("has ", shape.size(), " dimensions; it");
    return absl::InvalidArgumentError(
        absl::StrCat("shape ", shown, " must be (steps, ranks, experts) or (steps, microbatches, ranks, experts)"));
  }
  static const char* const kNames3[] = {"steps", "ranks", "experts"};
  static const char* const kNames4[] = {"steps", "microbatches", "ranks", "experts"};
  for (size_t i = 0; i < shape.size(); ++i) {
    const char* what = shape.size() == 3 ? kNames3[i] : kNames4[i];
    if (shape[i] < 1 || shape[i] > kMaxTraceDim) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape ", NpyShapeString(shape), ": ", what, " must be in [1, ", kMaxTraceDim, "]"));
    }
  }
  const bool has_mb = shape.size() == 4;
  TraceDims d;
  d.steps = static_cast<int>(shape[0]);
  d.microbatches = has_mb ? static_cast<int>(shape[1]) : 1;
  d.ranks = static_cast<int>(shape[has_mb ? 2 : 1]);
  d.experts = static_cast<int>(shape[has_mb ? 3 : 2]);
  if (absl::Status s = CheckMatrixSize(d); !s.ok()) return s;
  return d;
}

std::string NpyTraceLayerPreamble(const WorkloadShape& s) {
  std::vector<int64_t> shape = {s.steps, s.microbatches, s.ranks, s.experts};
  if (s.microbatches == 1) shape.erase(shape.begin() + 1);
  return NpyInt64Preamble(shape);
}

void AppendNpyTraceMatrix(std::string& out, const LoadMatrix& matrix) { AppendLittleEndian(out, matrix.data()); }

}  // namespace taot::sim
