#include "taot/sim/trace.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <numeric>
#include <optional>
#include <string_view>
#include <system_error>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "taot/planner/plan_request.h"

namespace taot::sim {
namespace {

namespace fs = std::filesystem;

constexpr int kMaxLayers = 1000;      // the file names have three digits
constexpr int64_t kMaxDim = INT_MAX;  // WorkloadShape and LoadMatrix index with int
// numpy's own reader refuses headers over 10,000 bytes by default; ours are under 200.
constexpr uint64_t kMaxNpyHeaderBytes = 65536;
constexpr size_t kQuoted = 40;  // bytes of the file an error message quotes at most

// At most kQuoted bytes of `text` for an error message, marked when cut.
std::string Quote(std::string_view text) {
  if (text.size() <= kQuoted) return std::string(text);
  return std::string(text.substr(0, kQuoted)) + "...";
}

// ---------------------------------------------------------------------------------------------
// Shapes and the checks every format shares.

struct TraceDims {
  int steps = 0;
  int microbatches = 1;
  int ranks = 0;
  int experts = 0;
  bool operator==(const TraceDims&) const = default;
};

// One layer file, held as the matrices the workload hands out.
struct Layer {
  TraceDims dims;
  std::vector<LoadMatrix> matrices;  // [step * microbatches + microbatch]
};

// Written the way a user would see it from numpy: (S, R, E), or (S, M, R, E) with microbatches.
std::string DimsString(const TraceDims& d) {
  if (d.microbatches == 1) return absl::StrCat("(", d.steps, ", ", d.ranks, ", ", d.experts, ")");
  return absl::StrCat("(", d.steps, ", ", d.microbatches, ", ", d.ranks, ", ", d.experts, ")");
}

std::string DimsString(const std::vector<int64_t>& dims) {
  // numpy writes a 1-tuple as (n,); keep that so the message matches what the user saved.
  return absl::StrCat("(", absl::StrJoin(dims, ", "), dims.size() == 1 ? ",)" : ")");
}

// Why `count` cannot be a routed token count, or nothing when it can.
std::optional<std::string> CountProblem(int64_t count) {
  if (count >= 0 && count <= kMaxTokensPerEntry) return std::nullopt;
  return absl::StrCat("must be an integer in [0, 2^40], got ", count);
}

// The planners need every matrix's total within kMaxTotalTokens (ValidateRequest); say so here,
// where the user can still tell which step it was, rather than later in the simulator.
std::optional<std::string> TotalProblem(const LoadMatrix& m) {
  int64_t total = 0;
  for (int64_t c : m.data()) {
    total += c;  // every entry is at most 2^40, so stopping past 2^52 cannot overflow
    if (total > kMaxTotalTokens) {
      return absl::StrCat("holds more than 2^52 (", kMaxTotalTokens, ") tokens in total");
    }
  }
  return std::nullopt;
}

std::string StepName(int step, int microbatch, const TraceDims& d) {
  if (d.microbatches == 1) return absl::StrCat("step ", step);
  return absl::StrCat("step ", step, ", microbatch ", microbatch);
}

// The request limits (plan_request.h) on one matrix, checked before a layer is allocated, since
// every matrix becomes a planner's request.
absl::Status CheckMatrixSize(const TraceDims& d) {
  return CheckRequestSize(d.ranks, d.experts, "ranks", "experts");
}

// Rules that do not depend on the format: experts a multiple of ranks, totals in range.
absl::Status CheckLayer(const Layer& layer, const std::string& name) {
  const TraceDims& d = layer.dims;
  if (d.experts % d.ranks != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": ", d.experts, " experts is not a multiple of ", d.ranks,
                     " ranks (every rank is home to experts / ranks of them)"));
  }
  for (int s = 0; s < d.steps; ++s) {
    for (int m = 0; m < d.microbatches; ++m) {
      const LoadMatrix& matrix = layer.matrices[static_cast<size_t>(s) * d.microbatches + m];
      if (auto problem = TotalProblem(matrix)) {
        return absl::InvalidArgumentError(
            absl::StrCat(name, ": ", StepName(s, m, d), ": ", *problem));
      }
    }
  }
  return absl::OkStatus();
}

Layer EmptyLayer(const TraceDims& d) {
  Layer layer;
  layer.dims = d;
  layer.matrices.assign(static_cast<size_t>(d.steps) * d.microbatches,
                        LoadMatrix(d.ranks, d.experts));
  return layer;
}

// ---------------------------------------------------------------------------------------------
// Finding the layer files.

struct LayerFile {
  int index = 0;
  TraceFormat format = TraceFormat::kCsv;
  fs::path path;
  std::string name;  // as errors show it: the directory the user gave joined with the file name
};

std::optional<TraceFormat> FormatOfExtension(const fs::path& path) {
  const std::string ext = path.extension().string();
  if (ext == ".csv") return TraceFormat::kCsv;
  if (ext == ".npy") return TraceFormat::kNpy;
  return std::nullopt;
}

// A name that looks meant as a layer file: "layer_" and a trace extension. Other files (a README,
// the trainer's config) may sit beside the layers.
bool LooksLikeLayerFile(const std::string& filename) {
  return filename.starts_with("layer_") && FormatOfExtension(filename).has_value();
}

// The layer index of "layer_007.csv", or nothing unless the digits are exactly three.
std::optional<int> LayerIndex(const std::string& filename) {
  const std::string digits = fs::path(filename).stem().string().substr(6);
  if (digits.size() != 3 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  return std::stoi(digits);
}

absl::StatusOr<std::vector<LayerFile>> ListLayerFiles(const std::string& directory) {
  std::vector<LayerFile> files;
  std::error_code ec;
  for (fs::directory_iterator it(directory, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string filename = it->path().filename().string();
    if (!LooksLikeLayerFile(filename)) continue;
    const std::string name = (fs::path(directory) / filename).string();
    const std::optional<int> index = LayerIndex(filename);
    if (!index) {
      return absl::InvalidArgumentError(
          absl::StrCat(name,
                       ": layer files are named layer_NNN.csv or layer_NNN.npy (three digits, "
                       "zero-padded, from layer_000)"));
    }
    files.push_back({*index, *FormatOfExtension(filename), it->path(), name});
  }
  if (ec) {
    return absl::NotFoundError(absl::StrCat(directory, ": cannot list: ", ec.message()));
  }
  std::sort(files.begin(), files.end(), [](const LayerFile& a, const LayerFile& b) {
    return std::pair(a.index, a.format) < std::pair(b.index, b.format);
  });
  return files;
}

absl::Status CheckLayerFiles(const std::string& directory, const std::vector<LayerFile>& files) {
  if (files.empty()) {
    return absl::NotFoundError(
        absl::StrCat(directory,
                     ": no layer files (a trace holds layer_000.csv, layer_001.csv, ... or "
                     "layer_000.npy, layer_001.npy, ...)"));
  }
  for (const LayerFile& f : files) {
    if (f.format != files.front().format) {
      return absl::InvalidArgumentError(absl::StrCat(
          directory, ": mixes formats (", files.front().path.filename().string(), " and ",
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

// The layer files of a trace directory, or the single file the user named.
absl::StatusOr<std::vector<LayerFile>> FindLayerFiles(const std::string& path) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (!fs::exists(status)) {
    return absl::NotFoundError(absl::StrCat(path, ": no such trace directory or file"));
  }
  if (!fs::is_directory(status)) {
    const std::optional<TraceFormat> format = FormatOfExtension(path);
    if (!format) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": a trace file must end in .csv or .npy"));
    }
    return std::vector<LayerFile>{{0, *format, fs::path(path), path}};
  }
  absl::StatusOr<std::vector<LayerFile>> files = ListLayerFiles(path);
  if (!files.ok()) return files.status();
  if (absl::Status s = CheckLayerFiles(path, *files); !s.ok()) return s;
  return files;
}

// ---------------------------------------------------------------------------------------------
// NPY (numpy's format, https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html):
// magic, version, a little-endian header length, a Python dict literal, then the raw array.

struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

// The header is the repr() of a dict with three keys, so a few tokens are all it takes.
class NpyHeaderParser {
 public:
  explicit NpyHeaderParser(std::string_view text) : text_(text) {}

  absl::StatusOr<NpyHeader> Parse() {
    NpyHeader header;
    bool seen_descr = false, seen_order = false, seen_shape = false;
    if (!Consume('{')) return Expected("'{'");
    while (!Consume('}')) {
      absl::StatusOr<std::string> key = String();
      if (!key.ok()) return key.status();
      if (!Consume(':')) return Expected("':'");
      absl::Status value;
      if (*key == "descr") {
        seen_descr = true;
        if (Peek() == '[') {
          return absl::InvalidArgumentError(
              "a structured dtype is not supported; save a plain integer array");
        }
        value = Assign(String(), header.descr);
      } else if (*key == "fortran_order") {
        seen_order = true;
        value = Assign(Bool(), header.fortran_order);
      } else if (*key == "shape") {
        seen_shape = true;
        value = Assign(Tuple(), header.shape);
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat("unexpected key '", Quote(*key), "' in the NPY header"));
      }
      if (!value.ok()) return value;
      if (!Consume(',') && Peek() != '}') return Expected("',' or '}'");
    }
    if (!seen_descr || !seen_order || !seen_shape) {
      return absl::InvalidArgumentError(
          "the NPY header lacks one of 'descr', 'fortran_order' and 'shape'");
    }
    return header;
  }

 private:
  template <typename T>
  static absl::Status Assign(absl::StatusOr<T> parsed, T& out) {
    if (!parsed.ok()) return parsed.status();
    out = *std::move(parsed);
    return absl::OkStatus();
  }

  void SkipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n')) ++pos_;
  }
  char Peek() {
    SkipSpace();
    return pos_ < text_.size() ? text_[pos_] : '\0';
  }
  bool Consume(char c) {
    if (Peek() != c) return false;
    ++pos_;
    return true;
  }
  bool ConsumeWord(std::string_view word) {
    SkipSpace();
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }
  absl::Status Expected(const std::string& what) const {
    return absl::InvalidArgumentError(absl::StrCat("malformed NPY header: expected ", what,
                                                   " at byte ", pos_, ", at '",
                                                   Quote(text_.substr(std::min(pos_, text_.size()))),
                                                   "'"));
  }

  absl::StatusOr<std::string> String() {
    const char quote = Peek();
    if (quote != '\'' && quote != '"') return Expected("a quoted string");
    const size_t close = text_.find(quote, pos_ + 1);
    if (close == std::string_view::npos) return Expected("a closing quote");
    std::string s(text_.substr(pos_ + 1, close - pos_ - 1));
    pos_ = close + 1;
    return s;
  }

  absl::StatusOr<bool> Bool() {
    if (ConsumeWord("True")) return true;
    if (ConsumeWord("False")) return false;
    return Expected("True or False");
  }

  absl::StatusOr<std::vector<int64_t>> Tuple() {
    std::vector<int64_t> values;
    if (!Consume('(')) return Expected("'('");
    while (!Consume(')')) {
      SkipSpace();
      int64_t v = 0;
      const auto [end, err] = std::from_chars(text_.data() + pos_, text_.data() + text_.size(), v);
      if (err != std::errc() || v < 0) return Expected("a dimension");
      pos_ = static_cast<size_t>(end - text_.data());
      ConsumeWord("L");  // Python 2 wrote long integers as 5L
      values.push_back(v);
      if (!Consume(',') && Peek() != ')') return Expected("',' or ')'");
    }
    return values;
  }

  std::string_view text_;
  size_t pos_ = 0;
};

struct IntType {
  int bytes = 0;
  bool is_signed = false;
};

// Only little-endian (or byte-sized) integers: what np.save writes on every machine one would
// train on.
absl::StatusOr<IntType> ParseDtype(const std::string& descr) {
  static const std::pair<const char*, IntType> kTypes[] = {
      {"|i1", {1, true}}, {"<i1", {1, true}},  {"|u1", {1, false}}, {"<u1", {1, false}},
      {"<i2", {2, true}}, {"<u2", {2, false}}, {"<i4", {4, true}},  {"<u4", {4, false}},
      {"<i8", {8, true}}, {"<u8", {8, false}},
  };
  for (const auto& [name, type] : kTypes) {
    if (descr == name) return type;
  }
  if (descr.size() == 3 && descr[0] == '>' && (descr[1] == 'i' || descr[1] == 'u')) {
    return absl::InvalidArgumentError(
        absl::StrCat("dtype '", descr, "' is big-endian; save it little-endian (a.astype('<",
                     descr.substr(1), "'))"));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("dtype '", Quote(descr), "' is not an integer type (use int32/int64)"));
}

// Turns numpy's shape into trace dimensions: (S, R, E) or (S, M, R, E), none zero or too large.
absl::StatusOr<TraceDims> DimsOfShape(const std::vector<int64_t>& shape) {
  if (shape.size() != 3 && shape.size() != 4) {
    // A few dimensions are shown as numpy would; thousands would swamp the message.
    const std::string shown = shape.size() <= 8 ? DimsString(shape)
                                                : absl::StrCat("has ", shape.size(), " dimensions; it");
    return absl::InvalidArgumentError(
        absl::StrCat("shape ", shown,
                     " must be (steps, ranks, experts) or (steps, microbatches, ranks, experts)"));
  }
  static const char* const kNames3[] = {"steps", "ranks", "experts"};
  static const char* const kNames4[] = {"steps", "microbatches", "ranks", "experts"};
  for (size_t i = 0; i < shape.size(); ++i) {
    const char* what = shape.size() == 3 ? kNames3[i] : kNames4[i];
    if (shape[i] < 1 || shape[i] > kMaxDim) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape ", DimsString(shape), ": ", what, " must be in [1, ", kMaxDim, "]"));
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

uint64_t ReadLittleEndian(const unsigned char* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// "[2, 3, 17]": where numpy would index the element with flat index `flat`.
std::string ElementIndex(uint64_t flat, const std::vector<int64_t>& shape) {
  std::vector<uint64_t> index(shape.size());
  for (size_t i = shape.size(); i-- > 0;) {
    index[i] = flat % static_cast<uint64_t>(shape[i]);
    flat /= static_cast<uint64_t>(shape[i]);
  }
  return absl::StrCat("[", absl::StrJoin(index, ", "), "]");
}

// One element as a count, or why it is not one.
absl::StatusOr<int64_t> DecodeCount(const unsigned char* p, IntType type) {
  uint64_t raw = ReadLittleEndian(p, type.bytes);
  if (!type.is_signed) {
    if (raw > static_cast<uint64_t>(kMaxTokensPerEntry)) {
      return absl::InvalidArgumentError(absl::StrCat("must be an integer in [0, 2^40], got ", raw));
    }
    return static_cast<int64_t>(raw);
  }
  if (type.bytes < 8 && (raw >> (8 * type.bytes - 1)) != 0) raw |= ~uint64_t{0} << (8 * type.bytes);
  const auto value = static_cast<int64_t>(raw);
  if (auto problem = CountProblem(value)) return absl::InvalidArgumentError(*problem);
  return value;
}

class NpyReader {
 public:
  NpyReader(const fs::path& path, std::string name) : path_(path), name_(std::move(name)) {}

  absl::StatusOr<Layer> Read() {
    in_.open(path_, std::ios::binary);
    std::error_code ec;
    size_ = fs::file_size(path_, ec);
    if (!in_ || ec)
      return absl::NotFoundError(absl::StrCat(name_, ": cannot open: ", std::strerror(errno)));
    absl::StatusOr<NpyHeader> header = ReadHeader();
    if (!header.ok()) return Error(header.status().message());
    if (header->fortran_order) {
      return Error("fortran_order is True; save a C-order array (np.ascontiguousarray(a))");
    }
    absl::StatusOr<IntType> type = ParseDtype(header->descr);
    if (!type.ok()) return Error(type.status().message());
    absl::StatusOr<TraceDims> dims = DimsOfShape(header->shape);
    if (!dims.ok()) return Error(dims.status().message());
    if (absl::Status s = CheckDataSize(*header, *type); !s.ok()) return s;
    return ReadData(*header, *type, *dims);
  }

 private:
  absl::Status Error(absl::string_view message) const {
    return absl::InvalidArgumentError(absl::StrCat(name_, ": ", message));
  }

  absl::StatusOr<NpyHeader> ReadHeader() {
    unsigned char preamble[12] = {};
    static constexpr unsigned char kMagic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
    if (size_ < 10 || !ReadBytes(preamble, 8) || std::memcmp(preamble, kMagic, 6) != 0) {
      return absl::InvalidArgumentError("not an NPY file (it lacks the \\x93NUMPY magic)");
    }
    const int major = preamble[6];
    if (major < 1 || major > 3) {
      return absl::InvalidArgumentError(absl::StrCat("NPY version ", major, ".", int{preamble[7]},
                                                     " is not supported (1.0, 2.0 or 3.0)"));
    }
    const int length_bytes = major == 1 ? 2 : 4;
    if (!ReadBytes(preamble + 8, length_bytes)) return Truncated("header");
    const uint64_t header_length = ReadLittleEndian(preamble + 8, length_bytes);
    if (header_length > kMaxNpyHeaderBytes) {
      return absl::InvalidArgumentError(absl::StrCat("the NPY header of ", header_length,
                                                     " bytes is more than the limit of ",
                                                     kMaxNpyHeaderBytes));
    }
    data_offset_ = 8 + static_cast<uint64_t>(length_bytes) + header_length;
    if (data_offset_ > size_) return Truncated("header");
    std::string text(static_cast<size_t>(header_length), '\0');
    if (!ReadBytes(text.data(), text.size())) return Truncated("header");
    return NpyHeaderParser(text).Parse();
  }

  absl::Status Truncated(const std::string& part) const {
    return absl::InvalidArgumentError(
        absl::StrCat("truncated in the ", part, " (", size_, " bytes)"));
  }

  absl::Status CheckDataSize(const NpyHeader& header, IntType type) {
    elements_ = 1;
    uint64_t needed = 0;
    bool overflow = false;
    for (int64_t dim : header.shape) {
      overflow |= __builtin_mul_overflow(elements_, static_cast<uint64_t>(dim), &elements_);
    }
    overflow |= __builtin_mul_overflow(elements_, static_cast<uint64_t>(type.bytes), &needed);
    const uint64_t held = size_ - data_offset_;
    const std::string what =
        absl::StrCat("shape ", DimsString(header.shape), " of '", header.descr, "'");
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
  absl::StatusOr<Layer> ReadData(const NpyHeader& header, IntType type, const TraceDims& dims) {
    Layer layer = EmptyLayer(dims);
    const uint64_t per_matrix =
        static_cast<uint64_t>(dims.ranks) * static_cast<uint64_t>(dims.experts);
    constexpr uint64_t kBlockElements = uint64_t{1} << 16;
    std::vector<unsigned char> block(static_cast<size_t>(kBlockElements) * type.bytes);
    for (uint64_t first = 0; first < elements_; first += kBlockElements) {
      const uint64_t n = std::min(kBlockElements, elements_ - first);
      if (!ReadBytes(block.data(), n * static_cast<uint64_t>(type.bytes))) {
        return Error(absl::StrCat("read failed at element ", ElementIndex(first, header.shape)));
      }
      for (uint64_t i = 0; i < n; ++i) {
        const uint64_t flat = first + i;
        absl::StatusOr<int64_t> count = DecodeCount(block.data() + i * type.bytes, type);
        if (!count.ok()) {
          return Error(absl::StrCat("element ", ElementIndex(flat, header.shape), ": ",
                                    count.status().message()));
        }
        const uint64_t within = flat % per_matrix;
        layer.matrices[flat / per_matrix].at(static_cast<int>(within / dims.experts),
                                             static_cast<int>(within % dims.experts)) = *count;
      }
    }
    return layer;
  }

  template <typename Byte>
  bool ReadBytes(Byte* out, uint64_t n) {
    in_.read(reinterpret_cast<char*>(out), static_cast<std::streamsize>(n));
    return static_cast<uint64_t>(in_.gcount()) == n;
  }

  fs::path path_;
  std::string name_;
  std::ifstream in_;
  uint64_t size_ = 0;
  uint64_t data_offset_ = 0;
  uint64_t elements_ = 0;
};

// ---------------------------------------------------------------------------------------------
// CSV: a header `step,[microbatch,]rank,e0,e1,...`, then one row per (step, [microbatch,] rank).

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> SplitFields(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t start = 0;
  while (true) {
    const size_t comma = line.find(',', start);
    fields.push_back(
        Trim(line.substr(start, comma == std::string_view::npos ? comma : comma - start)));
    if (comma == std::string_view::npos) return fields;
    start = comma + 1;
  }
}

// Plain decimal digits only (no sign, no exponent), saturating at INT64_MAX so that a huge
// value reads as out of range rather than as malformed.
std::optional<int64_t> ParseNonNegative(std::string_view field) {
  if (field.empty() ||
      !std::all_of(field.begin(), field.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  int64_t v = 0;
  const auto [ptr, err] = std::from_chars(field.data(), field.data() + field.size(), v);
  if (err == std::errc::result_out_of_range) return INT64_MAX;
  return v;
}

struct CsvRow {
  int step = 0;
  int microbatch = 0;
  int rank = 0;
  int64_t line = 0;  // a file may hold more than 2^31 lines
  auto key() const { return std::tuple(step, microbatch, rank); }
};

class CsvReader {
 public:
  CsvReader(const fs::path& path, std::string name) : path_(path), name_(std::move(name)) {}

  absl::StatusOr<Layer> Read() {
    std::ifstream in(path_);
    if (!in)
      return absl::NotFoundError(absl::StrCat(name_, ": cannot open: ", std::strerror(errno)));
    std::string line;
    bool have_header = false;
    while (std::getline(in, line)) {
      ++line_number_;
      const std::string_view text = Trim(line);
      if (text.empty() || text.front() == '#') continue;
      const absl::Status s = have_header ? ParseRow(text) : ParseHeader(text);
      if (!s.ok()) return s;
      have_header = true;
    }
    if (in.bad()) return Error(absl::StrCat("read failed after line ", line_number_));
    if (!have_header)
      return Error("no header line (step,rank,e0,e1,... or step,microbatch,rank,e0,...)");
    if (rows_.empty()) return Error("no data rows after the header");
    return Assemble();
  }

 private:
  absl::Status Error(const std::string& message) const {
    return absl::InvalidArgumentError(absl::StrCat(name_, ": ", message));
  }
  absl::Status LineError(const std::string& message) const {
    return absl::InvalidArgumentError(absl::StrCat(name_, ":", line_number_, ": ", message));
  }

  absl::Status ParseHeader(std::string_view text) {
    const std::vector<std::string_view> fields = SplitFields(text);
    has_microbatch_ = fields.size() > 1 && fields[1] == "microbatch";
    index_columns_ = has_microbatch_ ? 3 : 2;
    const bool leading_ok = fields.size() >= index_columns_ && fields[0] == "step" &&
                            fields[index_columns_ - 1] == "rank";
    if (!leading_ok) {
      return LineError(absl::StrCat(
          "the header must start 'step,rank,e0,...' or 'step,microbatch,rank,e0,...', got '",
          Quote(text), "'"));
    }
    for (size_t c = index_columns_; c < fields.size(); ++c) {
      const std::string expected = absl::StrCat("e", c - index_columns_);
      if (fields[c] != expected) {
        return LineError(absl::StrCat("header column ", c + 1, ": expected '", expected, "', got '",
                                      Quote(fields[c]), "'"));
      }
    }
    experts_ = fields.size() - index_columns_;
    if (experts_ == 0) return LineError("the header names no expert columns (e0, e1, ...)");
    if (experts_ > static_cast<size_t>(kMaxExperts)) {
      return LineError(absl::StrCat(experts_, " expert columns, more than the limit of ", kMaxExperts));
    }
    return absl::OkStatus();
  }

  // A step, microbatch or rank: numbered from 0 and below `limit`.
  absl::StatusOr<int> IndexField(std::string_view field, const char* column, int64_t limit) const {
    const std::optional<int64_t> v = ParseNonNegative(field);
    if (!v || *v >= limit) {
      return LineError(absl::StrCat("column ", column, ": must be an integer in [0, ", limit - 1,
                                    "], got '", Quote(field), "'"));
    }
    return static_cast<int>(*v);
  }

  absl::Status ParseRow(std::string_view text) {
    const std::vector<std::string_view> fields = SplitFields(text);
    if (fields.size() != index_columns_ + experts_) {
      return LineError(
          absl::StrCat(fields.size(), " columns, the header has ", index_columns_ + experts_));
    }
    CsvRow row;
    row.line = line_number_;
    absl::StatusOr<int> step = IndexField(fields[0], "step", kMaxDim);
    if (!step.ok()) return step.status();
    row.step = *step;
    if (has_microbatch_) {
      absl::StatusOr<int> mb = IndexField(fields[1], "microbatch", kMaxDim);
      if (!mb.ok()) return mb.status();
      row.microbatch = *mb;
    }
    absl::StatusOr<int> rank = IndexField(fields[index_columns_ - 1], "rank", kMaxRanks);
    if (!rank.ok()) return rank.status();
    row.rank = *rank;
    for (size_t e = 0; e < experts_; ++e) {
      const std::string_view field = fields[index_columns_ + e];
      const std::optional<int64_t> v = ParseNonNegative(field);
      if (!v) {
        return LineError(absl::StrCat("column e", e, ": must be an integer >= 0, got '",
                                      Quote(field), "'"));
      }
      if (*v > kMaxTokensPerEntry) {
        return LineError(absl::StrCat("column e", e, ": must be at most 2^40 (", kMaxTokensPerEntry,
                                      "), got '", Quote(field), "'"));
      }
      counts_.push_back(*v);
    }
    rows_.push_back(row);
    return absl::OkStatus();
  }

  std::string RowName(const std::tuple<int, int, int>& key) const {
    const auto [s, m, r] = key;
    if (!has_microbatch_) return absl::StrCat("step ", s, ", rank ", r);
    return absl::StrCat("step ", s, ", microbatch ", m, ", rank ", r);
  }

  // Rows may come in any order; sorted, duplicates sit side by side and the first gap is the
  // first key that differs from its position, without a table as large as the indices claim.
  absl::Status CheckRows(const std::vector<size_t>& order, const TraceDims& d) const {
    for (size_t i = 1; i < order.size(); ++i) {
      const CsvRow& a = rows_[order[i - 1]];
      const CsvRow& b = rows_[order[i]];
      if (a.key() == b.key()) {
        return absl::InvalidArgumentError(
            absl::StrCat(name_, ":", std::max(a.line, b.line), ": duplicate row for ",
                         RowName(a.key()), " (also on line ", std::min(a.line, b.line), ")"));
      }
    }
    // Indices up to 2^31 each could claim more rows than int64 counts; then some are missing.
    int64_t expected = 0;
    if (__builtin_mul_overflow(int64_t{d.steps} * d.microbatches, int64_t{d.ranks}, &expected)) {
      expected = INT64_MAX;
    }
    for (size_t i = 0; i <= order.size(); ++i) {
      if (static_cast<int64_t>(i) == expected) break;
      const auto idx = static_cast<int64_t>(i);
      const std::tuple<int, int, int> want(
          static_cast<int>(idx / (int64_t{d.microbatches} * d.ranks)),
          static_cast<int>(idx / d.ranks % d.microbatches), static_cast<int>(idx % d.ranks));
      if (i == order.size() || rows_[order[i]].key() != want) {
        return Error(absl::StrCat("no row for ", RowName(want), " (every ",
                                  has_microbatch_ ? "(step, microbatch, rank)" : "(step, rank)",
                                  " up to the largest seen, ",
                                  RowName({d.steps - 1, d.microbatches - 1, d.ranks - 1}),
                                  ", must appear exactly once)"));
      }
    }
    return absl::OkStatus();
  }

  absl::StatusOr<Layer> Assemble() {
    TraceDims d;
    d.experts = static_cast<int>(experts_);
    for (const CsvRow& row : rows_) {
      d.steps = std::max(d.steps, row.step + 1);
      d.microbatches = std::max(d.microbatches, row.microbatch + 1);
      d.ranks = std::max(d.ranks, row.rank + 1);
    }
    std::vector<size_t> order(rows_.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return rows_[a].key() < rows_[b].key(); });
    if (absl::Status s = CheckRows(order, d); !s.ok()) return s;
    if (absl::Status s = CheckMatrixSize(d); !s.ok()) return Error(std::string(s.message()));
    Layer layer = EmptyLayer(d);
    for (size_t i = 0; i < rows_.size(); ++i) {
      const CsvRow& row = rows_[i];
      const auto first = counts_.begin() + static_cast<std::ptrdiff_t>(i * experts_);
      LoadMatrix& m =
          layer.matrices[static_cast<size_t>(row.step) * d.microbatches + row.microbatch];
      std::copy(first, first + d.experts, m.row(row.rank).begin());
    }
    return layer;
  }

  fs::path path_;
  std::string name_;
  int64_t line_number_ = 0;
  bool has_microbatch_ = false;
  size_t index_columns_ = 2;
  size_t experts_ = 0;
  std::vector<CsvRow> rows_;
  std::vector<int64_t> counts_;  // rows_.size() x experts_, in file order
};

// ---------------------------------------------------------------------------------------------
// The workload.

class TraceWorkload final : public Workload {
 public:
  TraceWorkload(WorkloadShape shape, std::vector<LoadMatrix> matrices)
      : shape_(shape), matrices_(std::move(matrices)) {}

  WorkloadShape shape() const override { return shape_; }

  LoadMatrix Load(int step, int layer, int microbatch) const override {
    const size_t index =
        (static_cast<size_t>(layer) * shape_.steps + step) * shape_.microbatches + microbatch;
    return matrices_.at(index);
  }

 private:
  WorkloadShape shape_;
  std::vector<LoadMatrix> matrices_;  // [(layer * steps + step) * microbatches + microbatch]
};

absl::StatusOr<Layer> ReadLayer(const LayerFile& file) {
  absl::StatusOr<Layer> layer = file.format == TraceFormat::kNpy
                                    ? NpyReader(file.path, file.name).Read()
                                    : CsvReader(file.path, file.name).Read();
  if (!layer.ok()) return layer;
  if (absl::Status s = CheckLayer(*layer, file.name); !s.ok()) return s;
  return layer;
}

// ---------------------------------------------------------------------------------------------
// Writing.

absl::Status CheckWorkloadShape(const WorkloadShape& s) {
  auto bad = [](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat("workload shape: ", what));
  };
  if (s.layers < 1 || s.layers > kMaxLayers) {
    return bad(absl::StrCat("layers must be in [1, ", kMaxLayers,
                            "] (three-digit file names), got ", s.layers));
  }
  if (s.steps < 1) return bad(absl::StrCat("steps must be at least 1, got ", s.steps));
  if (s.microbatches < 1)
    return bad(absl::StrCat("microbatches must be at least 1, got ", s.microbatches));
  if (s.ranks < 1) return bad(absl::StrCat("ranks must be at least 1, got ", s.ranks));
  if (s.experts < 1 || s.experts % s.ranks != 0) {
    return bad(absl::StrCat("experts must be a positive multiple of ranks (", s.ranks, "), got ",
                            s.experts));
  }
  return absl::OkStatus();
}

// A matrix the reader would accept back, so a written trace is always a readable one.
absl::Status CheckMatrix(const LoadMatrix& m, const WorkloadShape& s, int step, int layer, int mb) {
  const std::string where =
      absl::StrCat("workload: step ", step, ", layer ", layer, ", microbatch ", mb);
  if (m.sources() != s.ranks || m.experts() != s.experts) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": Load returned ", m.sources(), " x ",
                                                   m.experts(), ", the shape says ", s.ranks, " x ",
                                                   s.experts));
  }
  for (int r = 0; r < m.sources(); ++r) {
    for (int e = 0; e < m.experts(); ++e) {
      if (auto problem = CountProblem(m.at(r, e))) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": rank ", r, ", expert ", e, ": ", *problem));
      }
    }
  }
  if (auto problem = TotalProblem(m))
    return absl::InvalidArgumentError(absl::StrCat(where, ": ", *problem));
  return absl::OkStatus();
}

// numpy's header for a C-order little-endian int64 array, space-padded and ending in '\n' so the
// data starts 64-byte aligned, as np.save writes it.
std::string NpyPreamble(const std::vector<int64_t>& shape) {
  const std::string dict =
      absl::StrCat("{'descr': '<i8', 'fortran_order': False, 'shape': ", DimsString(shape), ", }");
  for (int major : {1, 2}) {
    const size_t fixed = major == 1 ? 10 : 12;
    const size_t header = dict.size() + 1 + (64 - (fixed + dict.size() + 1) % 64) % 64;
    if (major == 1 && header > 0xffff) continue;
    std::string out("\x93NUMPY", 6);
    out += static_cast<char>(major);
    out += '\0';
    for (size_t i = 0; i < fixed - 8; ++i) out += static_cast<char>((header >> (8 * i)) & 0xff);
    out += dict;
    out.append(header - dict.size() - 1, ' ');
    out += '\n';
    return out;
  }
  return {};  // unreachable: version 2.0 takes any header
}

void AppendLittleEndian(std::string& out, const std::vector<int64_t>& values) {
  if constexpr (std::endian::native == std::endian::little) {
    out.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(int64_t));
  } else {
    for (int64_t v : values) {
      for (int i = 0; i < 8; ++i)
        out += static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff);
    }
  }
}

void AppendNumber(std::string& out, int64_t v) {
  char buffer[24];
  const auto [end, err] = std::to_chars(buffer, buffer + sizeof(buffer), v);
  out.append(buffer, end);
}

std::string CsvHeader(const WorkloadShape& s) {
  std::string out = s.microbatches > 1 ? "step,microbatch,rank" : "step,rank";
  for (int e = 0; e < s.experts; ++e) absl::StrAppend(&out, ",e", e);
  out += '\n';
  return out;
}

void AppendCsvRows(std::string& out, const LoadMatrix& m, const WorkloadShape& s, int step,
                   int mb) {
  for (int r = 0; r < m.sources(); ++r) {
    AppendNumber(out, step);
    out += ',';
    if (s.microbatches > 1) {
      AppendNumber(out, mb);
      out += ',';
    }
    AppendNumber(out, r);
    for (int64_t c : m.row(r)) {
      out += ',';
      AppendNumber(out, c);
    }
    out += '\n';
  }
}

absl::Status WriteLayer(const Workload& workload, int layer, TraceFormat format,
                        const fs::path& path) {
  const WorkloadShape s = workload.shape();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    return absl::PermissionDeniedError(
        absl::StrCat(path.string(), ": cannot create: ", std::strerror(errno)));
  }
  std::string buffer;
  if (format == TraceFormat::kNpy) {
    std::vector<int64_t> shape = {s.steps, s.microbatches, s.ranks, s.experts};
    if (s.microbatches == 1) shape.erase(shape.begin() + 1);
    buffer = NpyPreamble(shape);
  } else {
    buffer = CsvHeader(s);
  }
  for (int step = 0; step < s.steps; ++step) {
    for (int mb = 0; mb < s.microbatches; ++mb) {
      const LoadMatrix m = workload.Load(step, layer, mb);
      if (absl::Status st = CheckMatrix(m, s, step, layer, mb); !st.ok()) return st;
      if (format == TraceFormat::kNpy)
        AppendLittleEndian(buffer, m.data());
      else
        AppendCsvRows(buffer, m, s, step, mb);
      out.write(buffer.data(), static_cast<std::streamsize>(buffer.size()));
      buffer.clear();
    }
  }
  out.close();
  if (!out) return absl::DataLossError(absl::StrCat(path.string(), ": write failed"));
  return absl::OkStatus();
}

// Refuses a target that already holds a trace (or part of one), naming the first such file.
absl::Status CheckNoLayerFiles(const std::string& directory) {
  std::vector<std::string> existing;
  std::error_code ec;
  for (fs::directory_iterator it(directory, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string filename = it->path().filename().string();
    if (LooksLikeLayerFile(filename)) existing.push_back(filename);
  }
  if (ec) return absl::NotFoundError(absl::StrCat(directory, ": cannot list: ", ec.message()));
  if (existing.empty()) return absl::OkStatus();
  std::sort(existing.begin(), existing.end());
  return absl::AlreadyExistsError(absl::StrCat((fs::path(directory) / existing.front()).string(),
                                               " already exists; WriteTrace does not overwrite a "
                                               "trace (write to a new or empty directory)"));
}

}  // namespace

std::string TraceLayerFileName(int layer, TraceFormat format) {
  return absl::StrFormat("layer_%03d.%s", layer, format == TraceFormat::kNpy ? "npy" : "csv");
}

absl::StatusOr<std::unique_ptr<Workload>> ReadTrace(const std::string& path) {
  absl::StatusOr<std::vector<LayerFile>> files = FindLayerFiles(path);
  if (!files.ok()) return files.status();
  std::vector<LoadMatrix> matrices;
  TraceDims dims;
  for (const LayerFile& file : *files) {
    absl::StatusOr<Layer> layer = ReadLayer(file);
    if (!layer.ok()) return layer.status();
    if (file.index == 0) {
      dims = layer->dims;
    } else if (layer->dims != dims) {
      return absl::InvalidArgumentError(
          absl::StrCat(file.name, ": shape ", DimsString(layer->dims), " differs from ",
                       files->front().path.filename().string(), "'s ", DimsString(dims),
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

absl::Status WriteTrace(const Workload& workload, const std::string& directory,
                        TraceFormat format) {
  const WorkloadShape shape = workload.shape();
  if (absl::Status s = CheckWorkloadShape(shape); !s.ok()) return s;
  std::error_code ec;
  fs::create_directories(directory, ec);
  if (ec || !fs::is_directory(directory, ec)) {
    return absl::InvalidArgumentError(absl::StrCat(
        directory, ": cannot create the trace directory",
        ec ? absl::StrCat(": ", ec.message()) : std::string(" (a file of that name exists)")));
  }
  if (absl::Status s = CheckNoLayerFiles(directory); !s.ok()) return s;
  std::vector<fs::path> written;
  for (int layer = 0; layer < shape.layers; ++layer) {
    written.push_back(fs::path(directory) / TraceLayerFileName(layer, format));
    if (absl::Status s = WriteLayer(workload, layer, format, written.back()); !s.ok()) {
      // A partial trace would read as a shorter, valid one; leave nothing behind instead.
      for (const fs::path& p : written) fs::remove(p, ec);
      return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace taot::sim
