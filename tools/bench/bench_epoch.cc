// Placeholder until the epoch benchmark lands; replaced by its owner.
#include <cstdio>

#include "commands.h"

namespace sluice::bench {

int RunEpoch(int, char**) {
  std::fprintf(stderr, "sluice-bench epoch: not built yet\n");
  return 2;
}

}  // namespace sluice::bench
