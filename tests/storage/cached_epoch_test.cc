// Loader epochs over a fake remote (fake_remote.h), with and without the block cache, through
// OpenStorage's test hook: the batches equal a local run's, and EpochStats::storage reports what
// each epoch cost the storage.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "assert_ok.h"
#include "fake_remote.h"
#include "loader/digest.h"
#include "loader/loader.h"
#include "storage/block_cache.h"
#include "test_dataset.h"
#include "test_util.h"

namespace sluice::storage {
namespace {

using loader::EpochStats;
using loader::Loader;
using loader::LoaderOptions;
using testing::FakeRemote;

struct EpochRun {
  std::string digest;
  EpochStats stats;
};

LoaderOptions Options() {
  LoaderOptions o;
  o.threads = 2;
  o.seed = 5;
  o.batching.max_frames = 1500;
  o.batching.shuffle_window = 16;
  return o;
}

// Epochs 0..n-1 of one loader: each epoch's digest and stats.
std::vector<EpochRun> Epochs(const std::string& dir, const LoaderOptions& o, int n) {
  std::vector<EpochRun> runs;
  std::unique_ptr<Loader> l;
  Status st = Loader::Open(dir, o, &l);
  EXPECT_OK(st);
  if (!st.ok()) return runs;
  for (int e = 0; e < n; ++e) {
    EXPECT_OK(l->Start(e));
    loader::BatchDigest digest;
    const loader::Batch* b;
    while ((st = l->Next(&b)).ok() && b != nullptr) digest.Add(*b);
    EXPECT_OK(st);
    runs.push_back({digest.hex(), l->stats()});
  }
  return runs;
}

// Every storage OpenStorage makes goes behind a FakeRemote while this lives; the last is kept.
class FakeRemoteHook {
 public:
  FakeRemoteHook() {
    SetStorageHookForTesting([this](std::shared_ptr<const shards::Storage> s) {
      last = FakeRemote::Over(std::move(s));
      return std::shared_ptr<const shards::Storage>(last);
    });
  }
  ~FakeRemoteHook() { SetStorageHookForTesting({}); }
  std::shared_ptr<FakeRemote> last;
};

class CachedEpochTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new sluice::testing::TempDir();
    loader::testing::WriteAudioDataset(dir_->path(), loader::testing::AudioDatasetSpec());
  }
  static void TearDownTestSuite() { delete dir_; }
  static sluice::testing::TempDir* dir_;
};
sluice::testing::TempDir* CachedEpochTest::dir_ = nullptr;

TEST_F(CachedEpochTest, LocalEpochsReportNoStorageTraffic) {
  const std::vector<EpochRun> local = Epochs(dir_->path(), Options(), 1);
  ASSERT_EQ(local.size(), 1u);
  EXPECT_EQ(local[0].stats.storage.requests, 0u);
  EXPECT_EQ(local[0].stats.storage.cache_misses, 0u);
  EXPECT_TRUE(local[0].stats.ToJson().at("storage").at("requests") == 0);
}

TEST_F(CachedEpochTest, RemoteEpochCountsRequestsBytesAndRetries) {
  const std::vector<EpochRun> local = Epochs(dir_->path(), Options(), 1);
  FakeRemoteHook hook;
  LoaderOptions o = Options();
  o.open_batches = 0;  // each block read once, so requests == blocks_read exactly
  const std::vector<EpochRun> local_once = Epochs(dir_->path(), o, 1);
  ASSERT_EQ(local_once.size(), 1u);
  std::vector<EpochRun> remote;
  {
    std::unique_ptr<Loader> l;
    ASSERT_OK(Loader::Open(dir_->path(), o, &l));
    hook.last->retry_every = 3;
    const uint64_t opened = hook.last->reads;  // footers and indexes: not the epoch's
    EXPECT_GT(opened, 0u);
    ASSERT_OK(l->Start(0));
    loader::BatchDigest digest;
    const loader::Batch* b;
    Status st;
    while ((st = l->Next(&b)).ok() && b != nullptr) digest.Add(*b);
    ASSERT_OK(st);
    remote.push_back({digest.hex(), l->stats()});
    EXPECT_EQ(hook.last->reads - opened, remote[0].stats.blocks_read);
  }
  const EpochStats& s = remote[0].stats;
  EXPECT_EQ(remote[0].digest, local_once[0].digest);
  EXPECT_EQ(local[0].digest, local_once[0].digest);
  EXPECT_EQ(s.storage.bytes_fetched, s.bytes_read);
  EXPECT_GT(s.storage.retries, 0u);
  EXPECT_EQ(s.storage.requests, s.blocks_read + s.storage.retries);
  EXPECT_EQ(s.storage.cache_hits + s.storage.cache_misses, 0u) << "no cache_dir, no cache";
  const nlohmann::json j = s.ToJson().at("storage");
  EXPECT_EQ(j.at("requests").get<uint64_t>(), s.storage.requests);
  EXPECT_EQ(j.at("retries").get<uint64_t>(), s.storage.retries);
  EXPECT_EQ(j.at("bytes_fetched").get<uint64_t>(), s.storage.bytes_fetched);
}

TEST_F(CachedEpochTest, SecondEpochFromTheCacheHasTheSameDigestAndNoRequests) {
  const std::vector<EpochRun> local = Epochs(dir_->path(), Options(), 2);
  ASSERT_EQ(local.size(), 2u);
  sluice::testing::TempDir cache;
  FakeRemoteHook hook;
  LoaderOptions o = Options();
  o.storage.cache_dir = cache.path();
  const std::vector<EpochRun> cached = Epochs(dir_->path(), o, 2);
  ASSERT_EQ(cached.size(), 2u);
  for (int e = 0; e < 2; ++e) EXPECT_EQ(cached[e].digest, local[e].digest) << "epoch " << e;

  const shards::StorageCounters& first = cached[0].stats.storage;
  const shards::StorageCounters& second = cached[1].stats.storage;
  EXPECT_GT(first.cache_misses, 0u);
  EXPECT_GT(first.requests, 0u);
  EXPECT_EQ(first.cache_bytes_written, first.bytes_fetched);
  EXPECT_EQ(second.requests, 0u) << "the second epoch read everything from the cache";
  EXPECT_EQ(second.cache_misses, 0u);
  EXPECT_EQ(second.cache_hits, cached[1].stats.blocks_read);
  EXPECT_EQ(second.cache_bytes_read, cached[1].stats.bytes_read);
  const nlohmann::json j = cached[1].stats.ToJson().at("storage");
  EXPECT_EQ(j.at("cache_hits").get<uint64_t>(), second.cache_hits);

  // A new loader (the next job) on the same cache directory: all hits from the first epoch.
  const std::vector<EpochRun> next = Epochs(dir_->path(), o, 1);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].digest, local[0].digest);
  EXPECT_EQ(next[0].stats.storage.requests, 0u);
}

}  // namespace
}  // namespace sluice::storage
