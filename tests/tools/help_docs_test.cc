// Every page of docs/ that a front end's --help sends the user to exists: a help text that names
// a missing page leaves the user with nowhere to go (sluice-bench --help once named
// docs/benchmarks.md before it was written). And a bad command line exits 2 in every front end.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <regex>
#include <string>
#include <vector>

#include "test_util.h"

namespace sluice {
namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  EXPECT_NE(v, nullptr) << name << " is unset: run through meson test";
  return v ? v : "";
}

// Every front end and subcommand.
std::vector<std::string> Commands() {
  const std::string shardify = Env("SHARDIFY"), bench = Env("SLUICE_BENCH");
  return {
      shardify,
      shardify + " audio",
      shardify + " text",
      shardify + " conversations",
      shardify + " info",
      shardify + " verify",
      shardify + " merge",
      bench,
      bench + " epoch",
      bench + " features",
      bench + " feed",
      Env("SLUICE_FEATURES"),
      Env("SLUICE_FEATURES") + " encoder-frames",
      Env("SLUICE_TRAIN"),
  };
}

TEST(ToolsHelp, NamesOnlyDocsThatExist) {
  const std::vector<std::string> commands = Commands();
  const std::string root = Env("SLUICE_SOURCE_ROOT");
  const std::regex doc(R"(docs/[A-Za-z0-9_./-]*[A-Za-z0-9_]\.md)");
  int named = 0;
  for (const std::string& command : commands) {
    const testing::ShellResult r = testing::RunShell(command + " --help");
    ASSERT_EQ(r.code, 0) << command << " --help\n" << r.out;
    for (std::sregex_iterator it(r.out.begin(), r.out.end(), doc), end; it != end; ++it) {
      const std::string page = it->str();
      struct stat st {};
      EXPECT_EQ(::stat((root + "/" + page).c_str(), &st), 0)
          << "`" << command << " --help` names " << page << ", which does not exist under " << root
          << ". HINT: write the page, or name the one that holds it";
      ++named;
    }
  }
  EXPECT_GT(named, 0) << "no --help names a page of docs/: the regex or the commands are stale";
}

// A bad command line exits 2, as every tool's --help and docs say, with CLI11's message (the
// first thing wrong: a missing required argument before an unknown flag): CLI11's own codes
// (105, 106, 109, ...) are not what scripts check for.
TEST(ToolsCommandLine, ABadCommandLineExitsTwoSayingWhy) {
  for (const std::string& command : Commands()) {
    const testing::ShellResult r = testing::RunShell(command + " --no-such-flag");
    EXPECT_EQ(r.code, 2) << command << " --no-such-flag\n" << r.out;
    // CLI11's "Run with --help", or sluice-bench's own list of commands.
    EXPECT_TRUE(r.out.find("--help") != std::string::npos ||
                r.out.find("unknown command") != std::string::npos)
        << command << "\n"
        << r.out;
  }
}

}  // namespace
}  // namespace sluice
