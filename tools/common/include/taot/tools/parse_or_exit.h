// The end of every command line's parse, written once: help goes to stdout with exit code 0, a
// bad command line is one error line naming the program and exit code 2.
#pragma once

#include <iostream>
#include <optional>
#include <ostream>
#include <string_view>

#include <CLI/CLI.hpp>

namespace taot::cli {

// Parses argv into `app`, which runs the chosen subcommand's callback. Returns the exit code when
// the program is to stop here: 0 after --help (printed on `out`), 2 after a bad command line
// ("PROGRAM: error: WHAT (see PROGRAM --help)" on `err`); nullopt when parsing succeeded.
// Exceptions a callback throws are not caught here (ExitOnException, cli_support.h, is the last
// line of defence).
std::optional<int> ParseOrExit(CLI::App& app, int argc, const char* const* argv, std::string_view program,
                               std::ostream& out = std::cout, std::ostream& err = std::cerr);

}  // namespace taot::cli
