// Placeholder until sluice-train lands.
#include <cstdio>
int main() {
  std::fprintf(stderr, "sluice-train: not built yet\n");
  return 2;
}
