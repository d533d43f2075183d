#include "taot/planner/json_fields.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "taot/planner/case_json.h"

namespace taot::json_fields {
namespace {

using nlohmann::json;

constexpr size_t kShownValue = 40;
constexpr size_t kShownKey = 24;
constexpr size_t kShownPath = 100;
constexpr size_t kShownNumber = 20;
constexpr size_t kShownSyntaxError = 200;
// nlohmann's id for "number overflow": a number that is not a finite double.
constexpr int kNumberOverflow = 406;

std::string Where(const std::string& path) { return path.empty() ? "input" : path; }

// "line 3, column 5" of byte `offset`, both from 1 (columns count bytes).
std::string LineColumn(std::string_view text, size_t offset) {
  offset = std::min(offset, text.size());
  const std::string_view before = text.substr(0, offset);
  const size_t line_start = before.rfind('\n') == std::string_view::npos ? 0 : before.rfind('\n') + 1;
  return absl::StrCat("line ", std::count(before.begin(), before.end(), '\n') + 1, ", column ",
                      offset - line_start + 1);
}

// nlohmann's message without its "[json.exception.parse_error.101] " tag and with the token it
// quotes ("last read: '...'", which may be the rest of the file) cut short.
std::string SyntaxError(const std::string& what, const std::string& last_token) {
  std::string message = what.substr(what.find("] ") == std::string::npos ? 0 : what.find("] ") + 2);
  if (const size_t at = message.find(last_token); !last_token.empty() && at != std::string::npos) {
    message.replace(at, last_token.size(), Prefix(last_token, kShownNumber));
  }
  return Prefix(message, kShownSyntaxError);
}

// Builds the tree from nlohmann's SAX events (its parser keeps an explicit stack, so input of
// any depth is safe to scan) and stops at kMaxJsonDepth, so nothing later recurses deeper than
// that: not the reader, not an error message, not the tree's destructor. Knowing which
// container is open, it can name the path of a bad value.
class TreeBuilder {
 public:
  explicit TreeBuilder(std::string_view text) : text_(text) {}

  bool null() { return Add(nullptr) != nullptr; }
  bool boolean(bool v) { return Add(v) != nullptr; }
  bool number_integer(json::number_integer_t v) { return Add(v) != nullptr; }
  bool number_unsigned(json::number_unsigned_t v) { return Add(v) != nullptr; }
  bool number_float(json::number_float_t v, const json::string_t&) { return Add(v) != nullptr; }
  bool string(json::string_t& v) { return Add(std::move(v)) != nullptr; }
  bool binary(json::binary_t& v) { return Add(json::binary(std::move(v))) != nullptr; }
  bool start_object(size_t) { return Open(json::object()); }
  bool start_array(size_t) { return Open(json::array()); }
  bool key(json::string_t& k) {
    keys_.back() = std::move(k);
    return true;
  }
  bool end_object() { return Close(); }
  bool end_array() { return Close(); }
  bool parse_error(size_t position, const std::string& last_token, const nlohmann::detail::exception& e) {
    if (e.id == kNumberOverflow) {
      const size_t start = position >= last_token.size() ? position - last_token.size() : 0;
      status_ =
          absl::InvalidArgumentError(absl::StrCat(Where(Path()), ": number ", Prefix(last_token, kShownNumber),
                                                  " is out of range (beyond a double), at ", LineColumn(text_, start)));
    } else {
      status_ = absl::InvalidArgumentError(absl::StrCat("malformed JSON: ", SyntaxError(e.what(), last_token)));
    }
    return false;
  }

  const absl::Status& status() const { return status_; }
  json Take() && { return std::move(root_); }

 private:
  // Where the next value goes: each open array's next index, each open object's current key.
  std::string Path() const {
    std::string path;
    for (size_t i = 0; i < open_.size() && path.size() <= kShownPath; ++i) {
      const json& c = *open_[i];
      const bool innermost = i + 1 == open_.size();
      path = c.is_array() ? Index(path, innermost ? c.size() : c.size() - 1) : Join(path, Prefix(keys_[i], kShownKey));
    }
    return Prefix(path, kShownPath);
  }

  // Places `v` in the innermost open container; nullptr (and an error) for a repeated key.
  json* Add(json v) {
    if (open_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    json& parent = *open_.back();
    if (parent.is_array()) {
      parent.get_ref<json::array_t&>().push_back(std::move(v));
      return &parent.back();
    }
    auto [it, inserted] = parent.get_ref<json::object_t&>().emplace(keys_.back(), std::move(v));
    if (!inserted) {
      status_ = absl::InvalidArgumentError(absl::StrCat(Where(Path()), ": given twice"));
      return nullptr;
    }
    return &it->second;
  }

  bool Open(json container) {
    if (open_.size() >= static_cast<size_t>(kMaxJsonDepth)) {
      status_ = absl::InvalidArgumentError(
          absl::StrCat(Where(Path()), ": nests deeper than ", kMaxJsonDepth, " arrays and objects"));
      return false;
    }
    json* placed = Add(std::move(container));
    if (placed == nullptr) return false;
    open_.push_back(placed);
    keys_.emplace_back();
    return true;
  }

  bool Close() {
    open_.pop_back();
    keys_.pop_back();
    return true;
  }

  std::string_view text_;
  json root_;
  // The open containers, outermost first; a parent is not touched while a child is open, so
  // the pointers stay valid.
  std::vector<json*> open_;
  std::vector<std::string> keys_;  // per open container: the key of the value being read
  absl::Status status_;
};

// Appends a rendering of `value` to `out`, stopping once `out` is longer than `budget`; each
// level adds a character, so the recursion is no deeper than the budget.
// A scalar as JSON text. Input strings may hold invalid UTF-8, and a prefix may end inside a
// character: both are shown with U+FFFD rather than thrown over.
std::string Dump(const json& value) { return value.dump(-1, ' ', false, json::error_handler_t::replace); }

void Render(const json& value, std::string& out, size_t budget) {
  if (out.size() > budget) return;
  if (value.is_array() || value.is_object()) {
    out += value.is_array() ? '[' : '{';
    bool first = true;
    for (auto it = value.begin(); it != value.end() && out.size() <= budget; ++it) {
      if (!first) out += ',';
      first = false;
      if (value.is_object()) absl::StrAppend(&out, Dump(json(Prefix(it.key(), budget))), ":");
      Render(*it, out, budget);
    }
    out += value.is_array() ? ']' : '}';
  } else if (value.is_string()) {
    out += Dump(json(Prefix(value.get_ref<const std::string&>(), budget)));
  } else {
    out += Dump(value);
  }
}

}  // namespace

absl::StatusOr<nlohmann::json> Parse(std::string_view text) {
  if (text.size() > kMaxJsonBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("input: ", text.size(), " bytes is more than the limit of ", kMaxJsonBytes, " (256 MiB)"));
  }
  TreeBuilder builder(text);
  if (!json::sax_parse(text.begin(), text.end(), &builder)) return builder.status();
  return std::move(builder).Take();
}

std::string Join(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : absl::StrCat(path, ".", std::string(key));
}

std::string Index(const std::string& path, size_t i) { return absl::StrCat(path, "[", i, "]"); }

std::string Prefix(std::string_view text, size_t max) {
  if (text.size() <= max) return std::string(text);
  return std::string(text.substr(0, max)) + "...";
}

std::string Show(const nlohmann::json& value) {
  std::string text;
  Render(value, text, kShownValue);
  if (text.size() > kShownValue) text = text.substr(0, kShownValue - 3) + "...";
  return text;
}

void Reader::Fail(const std::string& path, const std::string& what) {
  if (!status_.ok()) return;
  status_ = absl::InvalidArgumentError(absl::StrCat(Where(path), ": ", what));
}

int64_t Reader::Int(const nlohmann::json& value, const std::string& path, int64_t min, int64_t max) {
  if (!ok()) return min;
  if (!value.is_number_integer()) {
    Fail(path, absl::StrCat("must be an integer, got ", Show(value)));
    return min;
  }
  if (value.is_number_unsigned() && value.get<uint64_t>() > static_cast<uint64_t>(max)) {
    Fail(path, absl::StrCat("must be in [", min, ", ", max, "], got ", Show(value)));
    return min;
  }
  const auto v = value.get<int64_t>();
  if (v < min || v > max) {
    Fail(path, absl::StrCat("must be in [", min, ", ", max, "], got ", v));
    return min;
  }
  return v;
}

double Reader::Number(const nlohmann::json& value, const std::string& path) {
  if (!ok()) return 0;
  if (!value.is_number()) {
    Fail(path, absl::StrCat("must be a number, got ", Show(value)));
    return 0;
  }
  return value.get<double>();
}

const nlohmann::json* Reader::Array(const nlohmann::json& value, const std::string& path) {
  if (!ok()) return nullptr;
  if (!value.is_array()) {
    Fail(path, absl::StrCat("must be an array, got ", Show(value)));
    return nullptr;
  }
  return &value;
}

const nlohmann::json* Reader::Object(const nlohmann::json& value, const std::string& path) {
  if (!ok()) return nullptr;
  if (!value.is_object()) {
    Fail(path, absl::StrCat("must be an object, got ", Show(value)));
    return nullptr;
  }
  return &value;
}

const nlohmann::json* Reader::Member(const nlohmann::json& obj, const std::string& path, std::string_view key,
                                     bool required) {
  if (!ok()) return nullptr;
  auto it = obj.find(key);
  if (it == obj.end()) {
    if (required) Fail(Join(path, key), "is required");
    return nullptr;
  }
  return &*it;
}

void Reader::OnlyKeys(const nlohmann::json& obj, const std::string& path,
                      std::initializer_list<std::string_view> known) {
  OnlyKeys(obj, path, std::span<const std::string_view>(known.begin(), known.size()));
}

void Reader::OnlyKeys(const nlohmann::json& obj, const std::string& path, std::span<const std::string_view> known) {
  if (!ok()) return;
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (std::find(known.begin(), known.end(), it.key()) == known.end()) {
      Fail(Join(path, Prefix(it.key(), kShownKey)), "unknown field");
      return;
    }
  }
}

}  // namespace taot::json_fields
