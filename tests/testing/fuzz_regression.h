// The inputs the fuzzers found (tests/fuzz, docs/testing.md "Fuzzing"), committed as
// tests/fuzz/regressions/<target>/<name> and replayed by the ordinary suites.
#pragma once

#include <string>

namespace sluice::testing {

// The bytes of tests/fuzz/regressions/<target>/<name>; a test failure (and "") when missing.
std::string FuzzRegression(const std::string& target, const std::string& name);

}  // namespace sluice::testing
