#include "npy_format.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <system_error>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "error_quote.h"

namespace taot::sim {
namespace {

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
          return absl::InvalidArgumentError("a structured dtype is not supported; save a plain integer array");
        }
        value = Assign(String(), header.descr);
      } else if (*key == "fortran_order") {
        seen_order = true;
        value = Assign(Bool(), header.fortran_order);
      } else if (*key == "shape") {
        seen_shape = true;
        value = Assign(Tuple(), header.shape);
      } else {
        return absl::InvalidArgumentError(absl::StrCat("unexpected key '", QuoteForError(*key), "' in the NPY header"));
      }
      if (!value.ok()) return value;
      if (!Consume(',') && Peek() != '}') return Expected("',' or '}'");
    }
    if (!seen_descr || !seen_order || !seen_shape) {
      return absl::InvalidArgumentError("the NPY header lacks one of 'descr', 'fortran_order' and 'shape'");
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
    return absl::InvalidArgumentError(absl::StrCat("malformed NPY header: expected ", what, " at byte ", pos_, ", at '",
                                                   QuoteForError(text_.substr(std::min(pos_, text_.size()))), "'"));
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

}  // namespace

absl::StatusOr<int> NpyHeaderLengthBytes(std::string_view first_bytes) {
  if (first_bytes.size() < 8 || first_bytes.substr(0, 6) != std::string_view("\x93NUMPY", 6)) {
    return absl::InvalidArgumentError("not an NPY file (it lacks the \\x93NUMPY magic)");
  }
  const int major = static_cast<unsigned char>(first_bytes[6]);
  if (major < 1 || major > 3) {
    return absl::InvalidArgumentError(absl::StrCat("NPY version ", major, ".",
                                                   int{static_cast<unsigned char>(first_bytes[7])},
                                                   " is not supported (1.0, 2.0 or 3.0)"));
  }
  return major == 1 ? 2 : 4;
}

absl::StatusOr<NpyHeader> ParseNpyHeader(std::string_view text) { return NpyHeaderParser(text).Parse(); }

absl::StatusOr<NpyIntType> ParseNpyDtype(const std::string& descr) {
  static const std::pair<const char*, NpyIntType> kTypes[] = {
      {"|i1", {1, true}},  {"<i1", {1, true}}, {"|u1", {1, false}}, {"<u1", {1, false}}, {"<i2", {2, true}},
      {"<u2", {2, false}}, {"<i4", {4, true}}, {"<u4", {4, false}}, {"<i8", {8, true}},  {"<u8", {8, false}},
  };
  for (const auto& [name, type] : kTypes) {
    if (descr == name) return type;
  }
  if (descr.size() == 3 && descr[0] == '>' && (descr[1] == 'i' || descr[1] == 'u')) {
    return absl::InvalidArgumentError(
        absl::StrCat("dtype '", descr, "' is big-endian; save it little-endian (a.astype('<", descr.substr(1), "'))"));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("dtype '", QuoteForError(descr), "' is not an integer type (use int32/int64)"));
}

uint64_t ReadLittleEndian(const unsigned char* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

uint64_t DecodeNpyInteger(const unsigned char* p, NpyIntType type) {
  uint64_t raw = ReadLittleEndian(p, type.bytes);
  if (type.is_signed && type.bytes < 8 && (raw >> (8 * type.bytes - 1)) != 0) {
    raw |= ~uint64_t{0} << (8 * type.bytes);
  }
  return raw;
}

std::string NpyShapeString(const std::vector<int64_t>& shape) {
  return absl::StrCat("(", absl::StrJoin(shape, ", "), shape.size() == 1 ? ",)" : ")");
}

std::string NpyElementIndex(uint64_t flat, const std::vector<int64_t>& shape) {
  std::vector<uint64_t> index(shape.size());
  for (size_t i = shape.size(); i-- > 0;) {
    index[i] = flat % static_cast<uint64_t>(shape[i]);
    flat /= static_cast<uint64_t>(shape[i]);
  }
  return absl::StrCat("[", absl::StrJoin(index, ", "), "]");
}

std::string NpyInt64Preamble(const std::vector<int64_t>& shape) {
  const std::string dict =
      absl::StrCat("{'descr': '<i8', 'fortran_order': False, 'shape': ", NpyShapeString(shape), ", }");
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

void AppendLittleEndian(std::string& out, std::span<const int64_t> values) {
  if constexpr (std::endian::native == std::endian::little) {
    out.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(int64_t));
  } else {
    for (int64_t v : values) {
      for (int i = 0; i < 8; ++i) out += static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff);
    }
  }
}

}  // namespace taot::sim
