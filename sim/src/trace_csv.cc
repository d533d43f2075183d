#include "trace_csv.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <numeric>
#include <optional>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "csv_fields.h"
#include "error_quote.h"
#include "taot/planner/plan_request.h"

namespace taot::sim {
namespace {

namespace fs = std::filesystem;

struct CsvRow {
  int step = 0;
  int microbatch = 0;
  int rank = 0;
  int64_t line = 0;  // a file may hold more than 2^31 lines
  auto key() const { return std::tuple(step, microbatch, rank); }
};

class CsvTraceReader {
 public:
  CsvTraceReader(const fs::path& path, std::string name) : path_(path), name_(std::move(name)) {}

  absl::StatusOr<TraceLayer> Read() {
    std::ifstream in(path_);
    if (!in) return absl::NotFoundError(absl::StrCat(name_, ": cannot open: ", std::strerror(errno)));
    std::string line;
    bool have_header = false;
    while (std::getline(in, line)) {
      ++line_number_;
      const std::string_view text = TrimCsvBlanks(line);
      if (text.empty() || text.front() == '#') continue;
      const absl::Status s = have_header ? ParseRow(text) : ParseHeader(text);
      if (!s.ok()) return s;
      have_header = true;
    }
    if (in.bad()) return Error(absl::StrCat("read failed after line ", line_number_));
    if (!have_header) return Error("no header line (step,rank,e0,e1,... or step,microbatch,rank,e0,...)");
    if (rows_.empty()) return Error("no data rows after the header");
    return Assemble();
  }

 private:
  absl::Status Error(const std::string& message) const { return LayerFileError(name_, message); }
  absl::Status LineError(const std::string& message) const {
    return absl::InvalidArgumentError(absl::StrCat(name_, ":", line_number_, ": ", message));
  }

  absl::Status ParseHeader(std::string_view text) {
    const std::vector<std::string_view> fields = SplitCsvLine(text);
    has_microbatch_ = fields.size() > 1 && fields[1] == "microbatch";
    index_columns_ = has_microbatch_ ? 3 : 2;
    const bool leading_ok =
        fields.size() >= index_columns_ && fields[0] == "step" && fields[index_columns_ - 1] == "rank";
    if (!leading_ok) {
      return LineError(absl::StrCat("the header must start 'step,rank,e0,...' or 'step,microbatch,rank,e0,...', got '",
                                    QuoteForError(text), "'"));
    }
    for (size_t c = index_columns_; c < fields.size(); ++c) {
      const std::string expected = absl::StrCat("e", c - index_columns_);
      if (fields[c] != expected) {
        return LineError(
            absl::StrCat("header column ", c + 1, ": expected '", expected, "', got '", QuoteForError(fields[c]), "'"));
      }
    }
    experts_ = fields.size() - index_columns_;
    if (experts_ == 0) return LineError("the header names no expert columns (e0, e1, ...)");
    if (experts_ > static_cast<size_t>(kMaxExperts)) {
      return LineError(absl::StrCat(experts_, " expert columns, more than the limit of ", kMaxExperts));
    }
    return absl::OkStatus();
  }

  // A step, microbatch or rank into `out`: numbered from 0 and below `limit`.
  absl::Status IndexField(std::string_view field, const char* column, int64_t limit, int& out) const {
    const std::optional<int64_t> v = ParseCsvNonNegative(field);
    if (!v || *v >= limit) {
      return LineError(absl::StrCat("column ", column, ": must be an integer in [0, ", limit - 1, "], got '",
                                    QuoteForError(field), "'"));
    }
    out = static_cast<int>(*v);
    return absl::OkStatus();
  }

  absl::Status ParseRow(std::string_view text) {
    const std::vector<std::string_view> fields = SplitCsvLine(text);
    if (fields.size() != index_columns_ + experts_) {
      return LineError(absl::StrCat(fields.size(), " columns, the header has ", index_columns_ + experts_));
    }
    CsvRow row;
    row.line = line_number_;
    absl::Status s = IndexField(fields[0], "step", kMaxTraceDim, row.step);
    if (s.ok() && has_microbatch_) {
      s = IndexField(fields[1], "microbatch", kMaxTraceDim, row.microbatch);
    }
    if (s.ok()) s = IndexField(fields[index_columns_ - 1], "rank", kMaxRanks, row.rank);
    if (!s.ok()) return s;
    for (size_t e = 0; e < experts_; ++e) {
      const std::string_view field = fields[index_columns_ + e];
      const std::optional<int64_t> v = ParseCsvNonNegative(field);
      if (!v) {
        return LineError(absl::StrCat("column e", e, ": must be an integer >= 0, got '", QuoteForError(field), "'"));
      }
      if (*v > kMaxTokensPerEntry) {
        return LineError(absl::StrCat("column e", e, ": must be at most 2^40 (", kMaxTokensPerEntry, "), got '",
                                      QuoteForError(field), "'"));
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
        return absl::InvalidArgumentError(absl::StrCat(name_, ":", std::max(a.line, b.line), ": duplicate row for ",
                                                       RowName(a.key()), " (also on line ", std::min(a.line, b.line),
                                                       ")"));
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
      const std::tuple<int, int, int> want(static_cast<int>(idx / (int64_t{d.microbatches} * d.ranks)),
                                           static_cast<int>(idx / d.ranks % d.microbatches),
                                           static_cast<int>(idx % d.ranks));
      if (i == order.size() || rows_[order[i]].key() != want) {
        return Error(absl::StrCat("no row for ", RowName(want), " (every ",
                                  has_microbatch_ ? "(step, microbatch, rank)" : "(step, rank)",
                                  " up to the largest seen, ", RowName({d.steps - 1, d.microbatches - 1, d.ranks - 1}),
                                  ", must appear exactly once)"));
      }
    }
    return absl::OkStatus();
  }

  absl::StatusOr<TraceLayer> Assemble() {
    TraceDims d;
    d.experts = static_cast<int>(experts_);
    for (const CsvRow& row : rows_) {
      d.steps = std::max(d.steps, row.step + 1);
      d.microbatches = std::max(d.microbatches, row.microbatch + 1);
      d.ranks = std::max(d.ranks, row.rank + 1);
    }
    std::vector<size_t> order(rows_.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return rows_[a].key() < rows_[b].key(); });
    if (absl::Status s = CheckRows(order, d); !s.ok()) return s;
    if (absl::Status s = CheckMatrixSize(d); !s.ok()) return Error(std::string(s.message()));
    TraceLayer layer = EmptyTraceLayer(d);
    for (size_t i = 0; i < rows_.size(); ++i) {
      const CsvRow& row = rows_[i];
      const auto first = counts_.begin() + static_cast<std::ptrdiff_t>(i * experts_);
      LoadMatrix& m = layer.matrices[static_cast<size_t>(row.step) * d.microbatches + row.microbatch];
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

void AppendNumber(std::string& out, int64_t v) {
  char buffer[24];
  const auto [end, err] = std::to_chars(buffer, buffer + sizeof(buffer), v);
  out.append(buffer, end);
}

}  // namespace

absl::StatusOr<TraceLayer> ReadCsvTraceLayer(const fs::path& path, const std::string& name) {
  return CsvTraceReader(path, name).Read();
}

std::string CsvTraceLayerHeader(const WorkloadShape& s) {
  std::string out = s.microbatches > 1 ? "step,microbatch,rank" : "step,rank";
  for (int e = 0; e < s.experts; ++e) absl::StrAppend(&out, ",e", e);
  out += '\n';
  return out;
}

void AppendCsvTraceRows(std::string& out, const LoadMatrix& matrix, const WorkloadShape& s, int step, int microbatch) {
  for (int r = 0; r < matrix.sources(); ++r) {
    AppendNumber(out, step);
    out += ',';
    if (s.microbatches > 1) {
      AppendNumber(out, microbatch);
      out += ',';
    }
    AppendNumber(out, r);
    for (int64_t c : matrix.row(r)) {
      out += ',';
      AppendNumber(out, c);
    }
    out += '\n';
  }
}

}  // namespace taot::sim
