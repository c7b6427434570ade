// A dataset of hundreds of shards under `ulimit -n 64`: the loader used to
// keep one descriptor per shard open and failed with "Too many open files"; local shard files
// now borrow descriptors from a bounded cache (shards/fd_cache.h). The epoch runs in a process of
// its own (tests/loader/epoch_digest.cc) so the limit binds nothing else.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "test_dataset.h"
#include "test_util.h"

namespace sluice::loader {
namespace {

using ChildRun = sluice::testing::ShellResult;

ChildRun EpochDigest(const std::string& dir, int nofile) {
  const char* exe = std::getenv("EPOCH_DIGEST");
  if (exe == nullptr) return {};
  return sluice::testing::RunShell(std::string(exe) + " " + dir + " " + std::to_string(nofile));
}

TEST(FdLimit, HundredsOfShardsTrainUnderUlimit64WithTheSameBatches) {
  ASSERT_NE(std::getenv("EPOCH_DIGEST"), nullptr) << "meson sets EPOCH_DIGEST";
  sluice::testing::TempDir dir;
  testing::AudioDatasetSpec spec;
  spec.records = 320;
  spec.min_samples = 1600;
  spec.max_samples = 3200;
  spec.shard_size = 1;  // one record per shard
  spec.block_size = 4000;
  const shards::Manifest m = testing::WriteAudioDataset(dir.path(), spec);
  ASSERT_GE(m.shards.size(), 300u);

  const ChildRun unlimited = EpochDigest(dir.path(), 0);
  ASSERT_EQ(unlimited.code, 0) << unlimited.out;
  const ChildRun limited = EpochDigest(dir.path(), 64);
  ASSERT_EQ(limited.code, 0) << limited.out;
  EXPECT_NE(unlimited.out.find("shards " + std::to_string(m.shards.size())), std::string::npos)
      << unlimited.out;
  EXPECT_EQ(limited.out, unlimited.out);
}

}  // namespace
}  // namespace sluice::loader
