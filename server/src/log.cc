#include "taot/server/log.h"

#include <atomic>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace taot::server {
namespace {

std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}

std::string Quoted(std::string_view value) {
  if (!value.empty() && value.find_first_of(" \"=") == std::string_view::npos) return std::string(value);
  return absl::StrCat("\"", absl::StrReplaceAll(std::string(value), {{"\\", "\\\\"}, {"\"", "\\\""}}), "\"");
}

}  // namespace

void SetLogLevel(LogLevel level) { g_level = static_cast<int>(level); }

bool ParseLogLevel(std::string_view name, LogLevel& level) {
  for (LogLevel l : {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarning, LogLevel::kError}) {
    if (name == LevelName(l)) {
      level = l;
      return true;
    }
  }
  return false;
}

void Log(LogLevel level, std::string_view message,
         std::initializer_list<std::pair<std::string_view, std::string>> fields) {
  if (static_cast<int>(level) < g_level) return;
  std::string line = absl::StrCat("time=", absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(), absl::UTCTimeZone()),
                                  " level=", LevelName(level), " msg=", Quoted(message));
  for (const auto& [key, value] : fields) absl::StrAppend(&line, " ", std::string(key), "=", Quoted(value));
  line += "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace taot::server
