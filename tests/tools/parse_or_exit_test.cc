#include "taot/tools/parse_or_exit.h"

#include <gtest/gtest.h>

#include <sstream>
#include <vector>

namespace taot::cli {
namespace {

// An app with one subcommand taking --count; `ran` says whether its callback ran.
struct App {
  App() {
    CLI::App* run = app.add_subcommand("run", "Run it");
    run->add_option("--count", count, "How many")->required();
    run->callback([this] { ran = true; });
    app.require_subcommand(1);
  }
  std::optional<int> Parse(std::vector<const char*> args) {
    args.insert(args.begin(), "prog");
    return ParseOrExit(app, static_cast<int>(args.size()), args.data(), "prog", out, err);
  }
  CLI::App app{"prog: a test program"};
  int count = 0;
  bool ran = false;
  std::ostringstream out, err;
};

TEST(ParseOrExitTest, AGoodCommandLineRunsTheCallbackAndGoesOn) {
  App a;
  EXPECT_EQ(a.Parse({"run", "--count", "3"}), std::nullopt);
  EXPECT_TRUE(a.ran);
  EXPECT_EQ(a.count, 3);
  EXPECT_EQ(a.out.str(), "");
  EXPECT_EQ(a.err.str(), "");
}

TEST(ParseOrExitTest, HelpIsPrintedOnOutWithExitCodeZero) {
  App a;
  EXPECT_EQ(a.Parse({"--help"}), 0);
  EXPECT_NE(a.out.str().find("prog: a test program"), std::string::npos) << a.out.str();
  EXPECT_EQ(a.err.str(), "");
  EXPECT_FALSE(a.ran);
}

TEST(ParseOrExitTest, ASubcommandsHelpIsItsOwn) {
  App a;
  EXPECT_EQ(a.Parse({"run", "--help"}), 0);
  EXPECT_NE(a.out.str().find("--count"), std::string::npos) << a.out.str();
  EXPECT_FALSE(a.ran);
}

TEST(ParseOrExitTest, ABadCommandLineIsOneErrorLineWithExitCodeTwo) {
  App a;
  EXPECT_EQ(a.Parse({"run", "--count", "many"}), 2);
  EXPECT_EQ(a.out.str(), "");
  const std::string err = a.err.str();
  EXPECT_EQ(err.rfind("prog: error: ", 0), 0u) << err;
  EXPECT_NE(err.find("--count"), std::string::npos) << err;
  EXPECT_NE(err.find("(see prog --help)\n"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_FALSE(a.ran);
}

TEST(ParseOrExitTest, AMissingSubcommandIsABadCommandLine) {
  App a;
  EXPECT_EQ(a.Parse({}), 2);
  EXPECT_NE(a.err.str().find("prog: error: "), std::string::npos);
}

}  // namespace
}  // namespace taot::cli
