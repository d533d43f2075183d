#include "taot/tools/parse_or_exit.h"

#include <string>

namespace taot::cli {

std::optional<int> ParseOrExit(CLI::App& app, int argc, const char* const* argv, std::string_view program,
                               std::ostream& out, std::ostream& err) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and the like: CLI11 prints what was asked for (the chosen subcommand's help).
    if (e.get_exit_code() == 0) return app.exit(e, out, err);
    const std::string name(program);
    err << name << ": error: " << e.what() << " (see " << name << " --help)\n";
    return 2;
  }
  return std::nullopt;
}

}  // namespace taot::cli
