// Writes the tiny dataset docs/examples/train_loop.cc runs on in the test suite.
#include <cstdio>
#include <filesystem>

#include "test_dataset.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  std::filesystem::remove_all(argv[1]);
  std::filesystem::create_directories(argv[1]);
  sluice::loader::testing::AudioDatasetSpec spec;
  spec.records = 24;
  sluice::loader::testing::WriteAudioDataset(argv[1], spec);
  return 0;
}
