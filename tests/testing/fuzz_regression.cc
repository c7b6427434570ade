#include "fuzz_regression.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace sluice::testing {

std::string FuzzRegression(const std::string& target, const std::string& name) {
  const std::string path = std::string(SLUICE_FUZZ_REGRESSIONS) + "/" + target + "/" + name;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.is_open()) << path << ": missing fuzz regression input";
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace sluice::testing
