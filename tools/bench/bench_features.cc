// Placeholder until the features benchmark lands.
#include <cstdio>

#include "commands.h"

namespace sluice::bench {

int RunFeatures(int, char**) {
  std::fprintf(stderr, "sluice-bench features: not built yet\n");
  return 2;
}

}  // namespace sluice::bench
