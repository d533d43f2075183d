// Structured log lines on stderr: `time=... level=info msg="..." key=value ...`, one event per
// line, so operators can grep them and log shippers can parse them.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace taot::server {

enum class LogLevel { kDebug, kInfo, kWarning, kError };

// Lines below this level are dropped (default: info).
void SetLogLevel(LogLevel level);
// "debug", "info", "warning" or "error"; false for anything else.
bool ParseLogLevel(std::string_view name, LogLevel& level);

// Values are quoted when they hold a space, a quote or '='.
void Log(LogLevel level, std::string_view message,
         std::initializer_list<std::pair<std::string_view, std::string>> fields = {});

}  // namespace taot::server
