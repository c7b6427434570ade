// The sampler's contracts: partition, equal counts, caps, purity (loader/plan.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>

#include "assert_ok.h"
#include "base/random.h"
#include "loader/plan.h"
#include "synthetic_index.h"

namespace sluice::loader {
namespace {

using testing::MakeSyntheticIndex;

TEST(Plan, RanksAreDisjointCompleteAndEqualForWorldSizesOneToEight) {
  const IndexColumns ix = MakeSyntheticIndex(7, 3);
  BatchingOptions opt;
  opt.max_frames = 3000;
  opt.shuffle_window = 64;
  for (int world = 1; world <= 8; ++world) {
    std::multiset<uint64_t> seen;
    size_t count = 0;
    for (int rank = 0; rank < world; ++rank) {
      EpochPlan plan;
      ASSERT_OK(MakeEpochPlan(ix, opt, 42, 5, rank, world, &plan));
      if (rank == 0) count = plan.batches.size();
      EXPECT_EQ(plan.batches.size(), count) << "world " << world << " rank " << rank;
      EXPECT_EQ(plan.global_batches, count * world);
      EXPECT_EQ(plan.repeated_records, 0u);
      seen.insert(plan.records.begin(), plan.records.end());
    }
    ASSERT_EQ(seen.size(), ix.num_records()) << "world " << world;
    uint64_t expect = 0;
    for (uint64_t r : seen) EXPECT_EQ(r, expect++);  // each record exactly once
  }
}

TEST(Plan, FewerRecordsThanRanksRepeatsRecordsAndSaysSo) {
  IndexColumns ix;
  ix.shard_first_record = {0, 3};
  ix.block_first_record = {0, 3};
  ix.block_shard = {0};
  ix.block_local = {0};
  ix.length = {10, 20, 30};
  ix.duration = {100, 200, 300};
  ix.block_of = {0, 0, 0};
  std::set<uint64_t> seen;
  uint64_t repeated = 0;
  for (int rank = 0; rank < 5; ++rank) {
    EpochPlan plan;
    ASSERT_OK(MakeEpochPlan(ix, {}, 1, 0, rank, 5, &plan));
    ASSERT_EQ(plan.batches.size(), 1u);
    seen.insert(plan.records.begin(), plan.records.end());
    repeated = plan.repeated_records;
  }
  EXPECT_EQ(seen.size(), 3u);
  EXPECT_EQ(repeated, 2u);
}

TEST(Plan, SelectedRecordsAlonePartitionedAcrossRanks) {
  IndexColumns ix = MakeSyntheticIndex(7, 3);
  ix.selected.resize(ix.num_records());
  Rng rng(11);
  std::set<uint64_t> want;
  for (uint64_t r = 0; r < ix.num_records(); ++r) {
    ix.selected[r] = rng.UniformInt(0, 9) < 3;
    if (ix.selected[r]) want.insert(r);
  }
  ASSERT_GT(want.size(), 10u);
  BatchingOptions opt;
  opt.max_frames = 3000;
  opt.shuffle_window = 64;
  for (int world = 1; world <= 4; ++world) {
    std::multiset<uint64_t> seen;
    for (int rank = 0; rank < world; ++rank) {
      EpochPlan plan;
      ASSERT_OK(MakeEpochPlan(ix, opt, 42, 5, rank, world, &plan));
      seen.insert(plan.records.begin(), plan.records.end());
    }
    EXPECT_EQ(seen.size(), want.size()) << "world " << world;  // each selected record once
    EXPECT_TRUE(std::equal(seen.begin(), seen.end(), want.begin(), want.end()))
        << "world " << world;
  }
  // Bucket bounds are quantiles of the selected lengths: selecting only the 50 longest records
  // puts every bound at or above the shortest of them.
  std::vector<uint64_t> order(ix.num_records());
  std::iota(order.begin(), order.end(), uint64_t{0});
  std::sort(order.begin(), order.end(),
            [&](uint64_t a, uint64_t b) { return ix.length[a] > ix.length[b]; });
  std::fill(ix.selected.begin(), ix.selected.end(), 0);
  for (size_t i = 0; i < 50; ++i) ix.selected[order[i]] = 1;
  EpochPlan plan;
  ASSERT_OK(MakeEpochPlan(ix, opt, 1, 0, 0, 1, &plan));
  ASSERT_FALSE(plan.bucket_bounds.empty());
  EXPECT_GE(plan.bucket_bounds.front(), ix.length[order[49]]);
  // Nothing selected: an error, not an empty epoch.
  std::fill(ix.selected.begin(), ix.selected.end(), 0);
  EXPECT_FALSE(MakeEpochPlan(ix, opt, 1, 0, 0, 1, &plan).ok());
}

TEST(Plan, BatchesRespectEveryCap) {
  const IndexColumns ix = MakeSyntheticIndex(5, 9);
  for (int which = 0; which < 3; ++which) {
    BatchingOptions opt;
    opt.max_frames = which == 0 ? 2500 : 0;
    opt.max_padded_frames = which == 1 ? 4000 : 0;
    opt.max_batch_size = which == 2 ? 7 : 0;
    EpochPlan plan;
    ASSERT_OK(MakeEpochPlan(ix, opt, 1, 0, 0, 1, &plan));
    for (const PlannedBatch& b : plan.batches) {
      uint64_t total = 0, longest = 0;
      for (uint32_t k = 0; k < b.rows; ++k) {
        total += ix.length[plan.records[b.first + k]];
        longest = std::max(longest, ix.length[plan.records[b.first + k]]);
      }
      EXPECT_EQ(total, b.total_length);
      EXPECT_EQ(longest, b.max_length);
      if (b.rows == 1) continue;  // a record over a cap gets a batch of its own
      if (opt.max_frames) {
        EXPECT_LE(total, opt.max_frames);
      }
      if (opt.max_padded_frames) {
        EXPECT_LE(longest * b.rows, opt.max_padded_frames);
      }
      if (opt.max_batch_size) {
        EXPECT_LE(b.rows, opt.max_batch_size);
      }
    }
  }
}

TEST(Plan, BucketingKeepsPaddingLow) {
  const IndexColumns ix = MakeSyntheticIndex(9, 11);
  BatchingOptions bucketed;
  bucketed.max_frames = 4000;
  BatchingOptions single = bucketed;
  single.num_buckets = 1;
  EpochPlan a, b;
  ASSERT_OK(MakeEpochPlan(ix, bucketed, 1, 0, 0, 1, &a));
  ASSERT_OK(MakeEpochPlan(ix, single, 1, 0, 0, 1, &b));
  EXPECT_LT(a.padding_waste(), b.padding_waste());
  EXPECT_LT(a.padding_waste(), 0.25);
}

TEST(Plan, IsAPureFunctionOfSeedAndEpoch) {
  const IndexColumns ix = MakeSyntheticIndex(6, 5);
  BatchingOptions opt;
  opt.max_frames = 2000;
  EpochPlan a, b, c, d;
  ASSERT_OK(MakeEpochPlan(ix, opt, 7, 1, 0, 1, &a));
  ASSERT_OK(MakeEpochPlan(ix, opt, 7, 1, 0, 1, &b));
  ASSERT_OK(MakeEpochPlan(ix, opt, 7, 2, 0, 1, &c));
  ASSERT_OK(MakeEpochPlan(ix, opt, 8, 1, 0, 1, &d));
  EXPECT_EQ(a.records, b.records);
  EXPECT_NE(a.records, c.records);
  EXPECT_NE(a.records, d.records);
}

TEST(Plan, WithoutShuffleRecordsComeInFileOrderPerBucket) {
  const IndexColumns ix = MakeSyntheticIndex(3, 2);
  BatchingOptions opt;
  opt.shuffle = false;
  opt.num_buckets = 1;
  opt.max_frames = 1500;
  EpochPlan plan;
  ASSERT_OK(MakeEpochPlan(ix, opt, 1, 0, 0, 1, &plan));
  for (size_t i = 0; i < plan.records.size(); ++i) EXPECT_EQ(plan.records[i], i);
}

TEST(Plan, RejectsABadRank) {
  const IndexColumns ix = MakeSyntheticIndex(2, 2);
  EpochPlan plan;
  EXPECT_TRUE(MakeEpochPlan(ix, {}, 1, 0, 3, 3, &plan).IsInvalidArgument());
  EXPECT_TRUE(MakeEpochPlan(ix, {}, 1, 0, 0, 0, &plan).IsInvalidArgument());
}

}  // namespace
}  // namespace sluice::loader

namespace sluice::loader {
namespace {

// bucket_2d over an ASR-like index whose transcripts' densities vary apart from the lengths: on 2
// ranks every record once with equal counts, every batch of more than one row within
// max_padded_sum, less padding of the token tensor than 1-D buckets under the same budget, and
// an elastic resume 2 -> 3 ranks still holding every record once.
TEST(Plan, TwoDimensionalBucketsHoldTheSumBudgetAndPadTokensLess) {
  IndexColumns ix = MakeSyntheticIndex(8, 13);
  Rng rng(6);
  ix.tokens.assign(ix.num_records(), 0);  // the synthetic index has no token column
  for (uint64_t r = 0; r < ix.num_records(); ++r)
    ix.tokens[r] = static_cast<uint32_t>(1 + ix.length[r] * rng.UniformInt(2, 60) / 100);
  BatchingOptions opt;
  opt.max_frames = 0;
  opt.max_padded_tokens = 0;
  opt.max_padded_sum = 6000;
  opt.num_buckets = 4;
  opt.max_bucket_wait = 4096;
  auto token_waste = [&](const EpochPlan& plan) {
    uint64_t used = 0, cells = 0;
    for (const PlannedBatch& b : plan.batches) {
      uint64_t longest = 0;
      for (uint32_t k = 0; k < b.rows; ++k) {
        longest = std::max<uint64_t>(longest, ix.tokens[plan.records[b.first + k]]);
        used += ix.tokens[plan.records[b.first + k]];
      }
      cells += longest * b.rows;
    }
    return 1.0 - static_cast<double>(used) / static_cast<double>(cells);
  };
  EpochPlan one_d;
  ASSERT_OK(MakeEpochPlan(ix, opt, 3, 0, 0, 1, &one_d));
  opt.bucket_2d = true;
  std::vector<int> seen(ix.num_records(), 0);
  size_t per_rank = 0;
  for (int rank = 0; rank < 2; ++rank) {
    EpochPlan plan;
    ASSERT_OK(MakeEpochPlan(ix, opt, 3, 0, rank, 2, &plan));
    EXPECT_FALSE(plan.token_bucket_bounds.empty());
    if (rank == 0) per_rank = plan.batches.size();
    EXPECT_EQ(plan.batches.size(), per_rank);
    for (const PlannedBatch& b : plan.batches) {
      uint64_t frames = 0, tokens = 0;
      for (uint32_t k = 0; k < b.rows; ++k) {
        const uint64_t r = plan.records[b.first + k];
        ++seen[r];
        frames = std::max(frames, ix.length[r]);
        tokens = std::max<uint64_t>(tokens, ix.tokens[r]);
      }
      if (b.rows > 1) {
        EXPECT_LE(b.rows * (frames + tokens), opt.max_padded_sum);
      }
    }
  }
  for (uint64_t r = 0; r < ix.num_records(); ++r) EXPECT_EQ(seen[r], 1) << "record " << r;
  EpochPlan two_d;
  ASSERT_OK(MakeEpochPlan(ix, opt, 3, 0, 0, 1, &two_d));
  EXPECT_LT(token_waste(two_d), token_waste(one_d));

  std::fill(seen.begin(), seen.end(), 0);
  for (int rank = 0; rank < 2; ++rank) {
    EpochPlan plan;
    ASSERT_OK(MakeEpochPlan(ix, opt, 3, 0, rank, 2, &plan));
    ASSERT_GT(plan.batches.size(), 2u);
    for (size_t j = 0; j < 2; ++j)
      for (uint32_t k = 0; k < plan.batches[j].rows; ++k)
        ++seen[plan.records[plan.batches[j].first + k]];
  }
  for (int rank = 0; rank < 3; ++rank) {
    EpochPlan plan;
    ASSERT_OK(MakeEpochPlan(ix, opt, 3, 0, {{2, 2}}, rank, 3, &plan));
    for (const PlannedBatch& b : plan.batches) {
      if (b.repeated > 0) continue;  // fewer records left than ranks: repeats, counted apart
      for (uint32_t k = 0; k < b.rows; ++k) ++seen[plan.records[b.first + k]];
    }
  }
  for (uint64_t r = 0; r < ix.num_records(); ++r) EXPECT_EQ(seen[r], 1) << "record " << r;
}

}  // namespace
}  // namespace sluice::loader
