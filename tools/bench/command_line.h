// The command-line parse every sluice-bench subcommand ends its Parse*Args with.
#pragma once

#include <CLI/CLI.hpp>

#include "options_cli.h"

namespace sluice::bench {

// Parses a subcommand's command line with `app`; false when the program ends here, with
// *exit_code: 0 after --help, 2 for a bad flag (its message printed).
inline bool ParseCommandLine(CLI::App& app, int argc, char** argv, int* exit_code) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    *exit_code = tools::CommandLineExit(app, e);
    return false;
  }
  return true;
}

}  // namespace sluice::bench
