#include "json_fields.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace taot::json_fields {

absl::StatusOr<nlohmann::json> Parse(std::string_view text) {
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    return absl::InvalidArgumentError(absl::StrCat("malformed JSON: ", e.what()));
  }
}

std::string Join(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : absl::StrCat(path, ".", std::string(key));
}

std::string Index(const std::string& path, size_t i) { return absl::StrCat(path, "[", i, "]"); }

std::string Show(const nlohmann::json& value) {
  std::string text = value.dump();
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return text;
}

void Reader::Fail(const std::string& path, const std::string& what) {
  if (!status_.ok()) return;
  status_ = absl::InvalidArgumentError(absl::StrCat(path.empty() ? "input" : path, ": ", what));
}

int64_t Reader::Int(const nlohmann::json& value, const std::string& path, int64_t min,
                    int64_t max) {
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

const nlohmann::json* Reader::Member(const nlohmann::json& obj, const std::string& path,
                                     std::string_view key, bool required) {
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
  if (!ok()) return;
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (std::find(known.begin(), known.end(), it.key()) == known.end()) {
      Fail(Join(path, it.key()), "unknown field");
      return;
    }
  }
}

}  // namespace taot::json_fields
