// Placeholder until features/ lands.
#include <cstdio>
int main() {
  std::fprintf(stderr, "sluice-features: not built yet\n");
  return 2;
}
