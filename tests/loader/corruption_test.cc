// Corrupt-block policies with real flipped bytes (loader/options.h, CorruptPolicy).
#include <gtest/gtest.h>

#include <memory>
#include <set>

#include "loader/loader.h"
#include "shards/dataset.h"
#include "test_dataset.h"
#include "test_util.h"
#include "assert_ok.h"

namespace sluice::loader {
namespace {

LoaderOptions Options(CorruptPolicy policy) {
  LoaderOptions o;
  o.threads = 2;
  o.corrupt = policy;
  o.batching.max_frames = 1500;
  o.batching.shuffle_window = 16;
  return o;
}

struct EpochRun {
  Status status;
  size_t batches = 0;
  size_t rows = 0;
  std::set<std::string> keys;
  EpochStats stats;
};

EpochRun Epoch(const std::string& dir, const LoaderOptions& o) {
  EpochRun run;
  std::unique_ptr<Loader> l;
  run.status = Loader::Open(dir, o, &l);
  if (!run.status.ok()) return run;
  run.status = l->Start(0);
  if (!run.status.ok()) return run;
  const Batch* b;
  while ((run.status = l->Next(&b)).ok() && b != nullptr) {
    ++run.batches;
    run.rows += b->size();
    for (std::string_view k : b->keys())
      if (!k.empty()) run.keys.insert(std::string(k));  // rows of a wholly lost batch have none
  }
  run.stats = l->stats();
  return run;
}

class CorruptionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    loader::testing::AudioDatasetSpec spec;
    spec.records = 60;
    loader::testing::WriteAudioDataset(dir_.path(), spec);
    clean_ = Epoch(dir_.path(), Options(CorruptPolicy::kFail));
    ASSERT_OK(clean_.status);
    std::unique_ptr<shards::Dataset> ds;
    ASSERT_OK(shards::Dataset::Open(dir_.path(), {}, &ds));
    ASSERT_GT(ds->num_shards(), 1u);
    const shards::ShardReader& shard = ds->shard(1);
    ASSERT_GT(shard.num_blocks(), 1u);
    shard_ = ds->manifest().shards[1].file;
    lost_ = shard.first_record(2) - shard.first_record(1);
    ds.reset();
    offset_ = loader::testing::FlipByteInBlock(dir_.path(), shard_, 1);
  }

  sluice::testing::TempDir dir_;
  EpochRun clean_;
  std::string shard_;
  uint64_t offset_ = 0;
  size_t lost_ = 0;
};

TEST_F(CorruptionTest, FailStopsWithAnErrorNamingShardAndOffset) {
  const EpochRun run = Epoch(dir_.path(), Options(CorruptPolicy::kFail));
  ASSERT_TRUE(run.status.IsCorruption()) << run.status.ToString();
  EXPECT_NE(run.status.message().find(shard_), std::string::npos) << run.status.ToString();
  EXPECT_NE(run.status.message().find(std::to_string(offset_)), std::string::npos)
      << run.status.ToString();
  EXPECT_LT(run.batches, clean_.batches);
}

TEST_F(CorruptionTest, SkipKeepsTheBatchCountAndCountsTheLostRecords) {
  for (int threads : {1, 3}) {
    LoaderOptions o = Options(CorruptPolicy::kSkip);
    o.threads = threads;
    const EpochRun run = Epoch(dir_.path(), o);
    ASSERT_OK(run.status);
    EXPECT_EQ(run.batches, clean_.batches);
    EXPECT_EQ(run.rows, clean_.rows);
    EXPECT_EQ(run.stats.skipped_records, lost_);
    EXPECT_EQ(run.keys.size(), clean_.keys.size() - lost_);  // lost rows repeat intact ones
  }
}

}  // namespace
}  // namespace sluice::loader
