// Typed field access on nlohmann::json with errors that name the path, shared by the CASE and
// PLAN readers.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace taot::json_fields {

// The reader stops at the first error; later calls return defaults and keep that error.
class Reader {
 public:
  // `path` names `value` in error messages ("" for the document root).
  int64_t Int(const nlohmann::json& value, const std::string& path, int64_t min, int64_t max);
  double Number(const nlohmann::json& value, const std::string& path);
  const nlohmann::json* Array(const nlohmann::json& value, const std::string& path);
  const nlohmann::json* Object(const nlohmann::json& value, const std::string& path);
  // The member `key` of object `obj`, or nullptr (and an error when `required`).
  const nlohmann::json* Member(const nlohmann::json& obj, const std::string& path, std::string_view key, bool required);
  // Fails on any key of `obj` not in `known`.
  void OnlyKeys(const nlohmann::json& obj, const std::string& path, std::initializer_list<std::string_view> known);
  void OnlyKeys(const nlohmann::json& obj, const std::string& path, std::span<const std::string_view> known);
  void Fail(const std::string& path, const std::string& what);

  bool ok() const { return status_.ok(); }
  const absl::Status& status() const { return status_; }

 private:
  absl::Status status_;
};

// Parses a whole document of at most kMaxJsonBytes, nested at most kMaxJsonDepth deep
// (taot/planner/case_json.h), refusing a key given twice. A syntax error says where
// ("malformed JSON: parse error at line 3, column 5: ..."); a number beyond a double names its
// path and position. No error quotes more than a short prefix of the input.
absl::StatusOr<nlohmann::json> Parse(std::string_view text);

std::string Join(const std::string& path, std::string_view key);
std::string Index(const std::string& path, size_t i);
// A short rendering of a bad value for an error message, however large or deep the value.
std::string Show(const nlohmann::json& value);
// At most `max` characters of `text`, marked with "..." when cut.
std::string Prefix(std::string_view text, size_t max);

}  // namespace taot::json_fields
