// The Loader end to end on small synthetic datasets: determinism across thread counts, resume,
// padding and lengths, bounded memory under a slow consumer, dtypes, text pass-through.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "assert_ok.h"
#include "features/fbank.h"
#include "features/half.h"
#include "features/pcm.h"
#include "features/resample.h"
#include "loader/digest.h"
#include "loader/loader.h"
#include "shards/dataset.h"
#include "test_dataset.h"
#include "test_util.h"

namespace sluice::loader {
namespace {

using loader::testing::AudioDatasetSpec;

class LoaderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new sluice::testing::TempDir();
    spec_ = AudioDatasetSpec();
    loader::testing::WriteAudioDataset(dir_->path(), spec_);
  }
  static void TearDownTestSuite() { delete dir_; }

  static LoaderOptions Options() {
    LoaderOptions o;
    o.threads = 2;
    o.seed = 17;
    o.batching.max_frames = 1500;
    o.batching.shuffle_window = 32;
    return o;
  }
  // Per-batch digests of one epoch (from start_batch), and the stats.
  static std::vector<uint64_t> Epoch(const LoaderOptions& o, uint64_t epoch, uint64_t start = 0,
                                     EpochStats* stats = nullptr) {
    std::unique_ptr<Loader> l;
    Status st = Loader::Open(dir_->path(), o, &l);
    EXPECT_OK(st);
    if (!st.ok()) return {};
    st = l->Start(epoch, start);
    EXPECT_OK(st);
    std::vector<uint64_t> out;
    const Batch* b;
    while ((st = l->Next(&b)).ok() && b != nullptr) out.push_back(DigestOf(*b));
    EXPECT_OK(st);
    if (stats) *stats = l->stats();
    return out;
  }

  static sluice::testing::TempDir* dir_;
  static AudioDatasetSpec spec_;
};
sluice::testing::TempDir* LoaderTest::dir_ = nullptr;
AudioDatasetSpec LoaderTest::spec_;

TEST_F(LoaderTest, SameBatchesWithOneOrFourThreads) {
  LoaderOptions o = Options();
  o.features.fbank.dither = 1.0f;  // dither is keyed by (seed, epoch, record), not by thread
  o.threads = 1;
  const std::vector<uint64_t> one = Epoch(o, 3);
  o.threads = 4;
  o.blocks_in_flight = 3;
  const std::vector<uint64_t> four = Epoch(o, 3);
  ASSERT_FALSE(one.empty());
  EXPECT_EQ(one, four);
  EXPECT_NE(one, Epoch(o, 4));  // another epoch, another order
}

TEST_F(LoaderTest, SpeedPerturbationIsDeterministicAndPlannedWithItsLengths) {
  LoaderOptions o = Options();
  o.speed_perturb = true;
  o.threads = 1;
  EpochStats stats;
  const std::vector<uint64_t> one = Epoch(o, 2, 0, &stats);
  o.threads = 3;
  EXPECT_EQ(one, Epoch(o, 2));
  EXPECT_EQ(std::vector<uint64_t>(one.begin() + 3, one.end()), Epoch(o, 2, 3));
  EXPECT_NE(one, Epoch(Options(), 2));
  // Each row's length is the frame count of its perturbed clip: one of the three factors.
  std::unique_ptr<Loader> l;
  ASSERT_OK(Loader::Open(dir_->path(), o, &l));
  ASSERT_OK(l->Start(2));
  features::FbankComputer fbank(features::FbankOptions{});
  std::set<double> factors;
  const Batch* b;
  while (l->Next(&b).ok() && b != nullptr) {
    for (size_t i = 0; i < b->size(); ++i) {
      const int idx = std::stoi(std::string(b->keys()[i]).substr(3));
      const size_t n = loader::testing::RecordSamples(spec_, idx).size();
      bool matched = false;
      for (double f : {0.9, 1.0, 1.1}) {
        const size_t m = f == 1.0 ? n : features::ResampledLength(n, 16000 * f, 16000);
        if (fbank.NumFrames(m) == b->lengths()[i]) {
          matched = true;
          factors.insert(f);
        }
      }
      EXPECT_TRUE(matched) << b->keys()[i];
    }
  }
  EXPECT_EQ(factors.size(), 3u);
}

TEST_F(LoaderTest, ResumeAtAnyBatchEqualsTheUninterruptedRun) {
  const LoaderOptions o = Options();
  const std::vector<uint64_t> whole = Epoch(o, 2);
  ASSERT_GT(whole.size(), 5u);
  for (uint64_t at : {uint64_t(1), uint64_t(whole.size() / 2), uint64_t(whole.size() - 1),
                      uint64_t(whole.size())}) {
    // Through the serialised state, as a trainer would.
    ResumeState state;
    ASSERT_OK(ResumeState::FromJson(ResumeState{2, at}.ToJson(), &state));
    const std::vector<uint64_t> rest = Epoch(o, state.epoch, state.batches);
    EXPECT_EQ(rest, std::vector<uint64_t>(whole.begin() + at, whole.end())) << "at " << at;
  }
}

TEST_F(LoaderTest, StateCountsBatchesTakenAndRestartsMidEpoch) {
  std::unique_ptr<Loader> l;
  ASSERT_OK(Loader::Open(dir_->path(), Options(), &l));
  ASSERT_OK(l->Start(1));
  const Batch* b;
  std::vector<uint64_t> first;
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK(l->Next(&b));
    first.push_back(DigestOf(*b));
  }
  EXPECT_EQ(l->state(), (ResumeState{1, 3, /*world=*/1}));
  // Restarting the same loader mid-epoch (the pipeline in flight is cancelled cleanly).
  ASSERT_OK(l->Start(ResumeState{1, 2}));
  ASSERT_OK(l->Next(&b));
  EXPECT_EQ(DigestOf(*b), first[2]);
  EXPECT_TRUE(l->Start(1, l->num_batches() + 1).IsInvalidArgument());
}

TEST_F(LoaderTest, NextForThatTimesOutTakesNothingAndYieldsTheSameBatches) {
  const LoaderOptions o = Options();
  const std::vector<uint64_t> whole = Epoch(o, 2);
  ASSERT_FALSE(whole.empty());
  std::unique_ptr<Loader> l;
  ASSERT_OK(Loader::Open(dir_->path(), o, &l));
  ASSERT_OK(l->Start(2));
  std::vector<uint64_t> got;
  uint64_t timeouts = 0;
  while (true) {
    // A wait of nothing: right after Start no batch is decoded yet, so it times out at least
    // once, and every time out must leave the epoch where it was.
    const Batch* b = nullptr;
    bool ready = false;
    ASSERT_OK(l->NextFor(&b, std::chrono::nanoseconds(0), &ready));
    if (!ready) {
      EXPECT_EQ(b, nullptr);
      EXPECT_EQ(l->state().batches, got.size());
      ++timeouts;
      continue;
    }
    if (b == nullptr) break;
    got.push_back(DigestOf(*b));
  }
  EXPECT_EQ(got, whole);
  EXPECT_GT(timeouts, 0u);
  EXPECT_EQ(l->state().batches, whole.size());
}

TEST_F(LoaderTest, CappingOpenBatchesRereadsBlocksButYieldsTheSameBatches) {
  LoaderOptions o = Options();
  o.open_batches = 0;  // each block read once
  const std::vector<uint64_t> once = Epoch(o, 5);
  o.open_batches = 2;
  EpochStats stats;
  const std::vector<uint64_t> capped = Epoch(o, 5, 0, &stats);
  EXPECT_EQ(once, capped);
  EXPECT_GT(stats.reread_blocks, 0u);
  EXPECT_LE(stats.max_open_bound, 2u);
  EXPECT_LE(stats.max_open, 2u);
  EXPECT_LE(stats.pool_batches, 2u + o.ready_batches + o.consumer_batches);
  EXPECT_EQ(Epoch(o, 5, once.size() / 2),
            std::vector<uint64_t>(once.begin() + once.size() / 2, once.end()));
}

TEST_F(LoaderTest, RowsHoldTheFbankOfTheirRecordAndZeroPadding) {
  LoaderOptions o = Options();
  std::unique_ptr<Loader> l;
  ASSERT_OK(Loader::Open(dir_->path(), o, &l));
  ASSERT_OK(l->Start(0));
  features::FbankOptions fo;
  fo.sample_frequency = 16000;
  features::FbankComputer fbank(fo);
  features::Workspace ws;
  std::set<std::string> keys;
  const Batch* b;
  Status st;
  size_t rows = 0;
  while ((st = l->Next(&b)).ok() && b != nullptr) {
    ASSERT_EQ(b->dim(), 80);
    int64_t longest = 0;
    for (size_t i = 0; i < b->size(); ++i) {
      const std::string key(b->keys()[i]);
      keys.insert(key);
      const int idx = std::stoi(key.substr(3));
      EXPECT_EQ(b->texts()[i], loader::testing::RecordText(idx));
      const std::vector<int16_t> pcm = loader::testing::RecordSamples(spec_, idx);
      std::vector<float> x(pcm.size()), want;
      features::Pcm16ToFloat(pcm.data(), pcm.size(), x.data(), 1.0f);
      const int64_t frames = fbank.Compute(x.data(), x.size(), &ws, &want);
      ASSERT_EQ(b->lengths()[i], frames) << key;
      longest = std::max<int64_t>(longest, frames);
      const float* row = b->features_f32() + i * b->frames() * b->dim();
      ASSERT_EQ(0, std::memcmp(row, want.data(), want.size() * 4)) << key;
      for (int64_t k = frames * b->dim(); k < b->frames() * b->dim(); ++k) ASSERT_EQ(row[k], 0.0f);
    }
    EXPECT_EQ(b->frames(), longest);
    rows += b->size();
  }
  ASSERT_OK(st);
  EXPECT_EQ(rows, static_cast<size_t>(spec_.records));
  EXPECT_EQ(keys.size(), static_cast<size_t>(spec_.records));
  const EpochStats s = l->stats();
  EXPECT_EQ(s.utterances, static_cast<uint64_t>(spec_.records));
  EXPECT_EQ(s.batches, l->num_batches());
  EXPECT_GT(s.audio_seconds, 0);
}

TEST_F(LoaderTest, RanksPartitionTheEpochWithEqualCounts) {
  std::set<std::string> all;
  size_t count = 0;
  for (int rank = 0; rank < 3; ++rank) {
    LoaderOptions o = Options();
    o.rank = rank;
    o.world = 3;
    std::unique_ptr<Loader> l;
    ASSERT_OK(Loader::Open(dir_->path(), o, &l));
    ASSERT_OK(l->Start(0));
    size_t n = 0;
    const Batch* b;
    while (l->Next(&b).ok() && b != nullptr) {
      ++n;
      for (std::string_view k : b->keys()) EXPECT_TRUE(all.insert(std::string(k)).second) << k;
    }
    if (rank == 0) count = n;
    EXPECT_EQ(n, count);
  }
  EXPECT_EQ(all.size(), static_cast<size_t>(spec_.records));
}

// A training loader and its held-out evaluation: complementary filters over one dataset, each
// partitioned over ranks, every record in exactly one of them; a filtered epoch resumes exactly.
TEST_F(LoaderTest, SelectSplitsTheDatasetByKey) {
  auto held_out = [](std::string_view key) { return key.back() == '3' || key.back() == '7'; };
  std::set<std::string> train, eval;
  for (int part = 0; part < 2; ++part) {
    for (int rank = 0; rank < 2; ++rank) {
      LoaderOptions o = Options();
      o.rank = rank;
      o.world = 2;
      if (part == 0)
        o.select = [&](std::string_view key) { return !held_out(key); };
      else
        o.select = held_out;
      std::unique_ptr<Loader> l;
      ASSERT_OK(Loader::Open(dir_->path(), o, &l));
      ASSERT_OK(l->Start(1));
      const Batch* b;
      while (l->Next(&b).ok() && b != nullptr)
        for (std::string_view k : b->keys()) {
          EXPECT_EQ(held_out(k), part == 1) << k;
          EXPECT_TRUE((part == 0 ? train : eval).insert(std::string(k)).second) << k;
        }
    }
  }
  EXPECT_GT(eval.size(), 0u);
  EXPECT_EQ(train.size() + eval.size(), static_cast<size_t>(spec_.records));

  LoaderOptions o = Options();
  o.select = held_out;
  const std::vector<uint64_t> whole = Epoch(o, 2);
  ASSERT_GE(whole.size(), 2u);
  EXPECT_EQ(Epoch(o, 2, whole.size() / 2),
            std::vector<uint64_t>(whole.begin() + static_cast<std::ptrdiff_t>(whole.size() / 2),
                                  whole.end()));

  o.select = [](std::string_view) { return false; };
  std::unique_ptr<Loader> l;
  const Status st = Loader::Open(dir_->path(), o, &l);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.ToString().find(dir_->path()), std::string::npos) << st.ToString();
}

// LoaderOptions::filter keeps exactly the records its condition holds for, computed here from
// the index by hand: the same batches as a select of those keys, every reason counted, and a
// filtered epoch resumes exactly.
TEST_F(LoaderTest, FilterKeepsWhatTheSameConditionOverTheIndexKeeps) {
  std::unique_ptr<shards::Dataset> ds;
  ASSERT_OK(shards::Dataset::Open(dir_->path(), {}, &ds));
  std::map<std::string, double, std::less<>> seconds;
  std::vector<double> all;
  for (size_t s = 0; s < ds->num_shards(); ++s)
    for (size_t i = 0; i < ds->shard(s).num_records(); ++i) {
      const double d = static_cast<double>(ds->shard(s).record(i).duration) / spec_.sample_rate;
      seconds.emplace(std::string(ds->shard(s).key(i)), d);
      all.push_back(d);
    }
  std::sort(all.begin(), all.end());
  const double median = all[all.size() / 2];
  const std::string dropped = seconds.begin()->first;
  uint64_t too_long = 0, by_key = 0;
  for (const auto& [key, d] : seconds) {
    if (!(d < median)) ++too_long;
    else if (key == dropped) ++by_key;
  }
  ASSERT_GT(too_long, 0u);

  LoaderOptions by_hand = Options();
  by_hand.select = [&](std::string_view key) {
    return seconds.find(key)->second < median && key != dropped;
  };
  LoaderOptions o = Options();
  char number[32];
  std::snprintf(number, sizeof number, "%.17g", median);
  o.filter = std::string("duration < ") + number + " and not key == '" + dropped + "'";
  EpochStats stats;
  const std::vector<uint64_t> filtered = Epoch(o, 2, 0, &stats);
  EXPECT_EQ(filtered, Epoch(by_hand, 2));
  ASSERT_EQ(stats.filtered.size(), 2u);
  EXPECT_EQ(stats.filtered[0].reason, std::string("duration < ") + number);
  EXPECT_EQ(stats.filtered[0].records, too_long);
  EXPECT_EQ(stats.filtered[1].reason, "not key == '" + dropped + "'");
  EXPECT_EQ(stats.filtered[1].records, by_key);
  EXPECT_EQ(stats.filtered_records, too_long + by_key);
  ASSERT_GE(filtered.size(), 2u);
  EXPECT_EQ(
      Epoch(o, 2, filtered.size() / 2),
      std::vector<uint64_t>(filtered.begin() + static_cast<std::ptrdiff_t>(filtered.size() / 2),
                            filtered.end()));

  std::unique_ptr<Loader> l;
  o.filter = "durration < 3";
  Status st = Loader::Open(dir_->path(), o, &l);
  EXPECT_EQ(st.message(), dir_->path() +
                              ": filter 'durration < 3': at byte 0: unknown column 'durration' "
                              "(the columns: duration, tokens, tokens_per_second, key)");
  o.filter = "duration < 0";
  st = Loader::Open(dir_->path(), o, &l);
  EXPECT_NE(
      st.message().find("filter 'duration < 0' keeps none of its " + std::to_string(spec_.records) +
                        " records; 'duration < 0' left out " + std::to_string(spec_.records)),
      std::string::npos)
      << st.ToString();
}

TEST_F(LoaderTest, SlowConsumerBoundsTheBatchesAndBlocksInFlight) {
  LoaderOptions o = Options();
  o.ready_batches = 2;
  o.blocks_in_flight = 4;
  std::unique_ptr<Loader> l;
  ASSERT_OK(Loader::Open(dir_->path(), o, &l));
  for (int epoch = 0; epoch < 2; ++epoch) {
    ASSERT_OK(l->Start(epoch));
    const Batch* b;
    while (l->Next(&b).ok() && b != nullptr)
      std::this_thread::sleep_for(std::chrono::milliseconds(3));
    const EpochStats s = l->stats();
    // Finished batches wait in pool buffers: the collate stage queues them without waiting for
    // room (a slow consumer stalls the read stage on the pool instead), so the queue may hold
    // more than ready_batches, never more than the pool.
    EXPECT_LE(s.max_ready, s.pool_batches);
    EXPECT_LE(s.max_tokens, 4u);
    EXPECT_LE(s.max_open, s.max_open_bound);
    EXPECT_LE(s.pool_batches, s.max_open_bound + 2 + 1 + 8);
    if (epoch == 1) {
      // The pool was sized by the first epoch's worst case; a later epoch may need a few bigger
      // buffers, but not one per batch.
      EXPECT_LT(s.pool_allocations, s.batches / 2 + 1);
    }
  }
}

TEST_F(LoaderTest, MemoryBudgetRefusesAPoolThatWouldNotFit) {
  LoaderOptions o = Options();
  o.memory_budget = 1 << 20;  // 1 MiB: less than a few batches of 80-bin fbank
  std::unique_ptr<Loader> l;
  ASSERT_OK(Loader::Open(dir_->path(), o, &l));
  const Status st = l->Start(0);
  ASSERT_TRUE(st.IsInvalidArgument()) << st.ToString();
  EXPECT_NE(st.message().find("memory_budget"), std::string::npos);
  o.memory_budget = 1ull << 32;
  ASSERT_OK(Loader::Open(dir_->path(), o, &l));
  EXPECT_OK(l->Start(0));
}

TEST_F(LoaderTest, MemoryBudgetBelowOneBatchFailsAtStartNamingTheOptionAndTheSize) {
  LoaderOptions o = Options();
  std::unique_ptr<Loader> l;
  ASSERT_OK(Loader::Open(dir_->path(), o, &l));
  ASSERT_OK(l->Start(0));
  const EpochStats free = l->stats();
  ASSERT_GT(free.pool_batches, 0u);
  const uint64_t batch_bytes = free.pool_bytes / free.pool_batches;  // the largest batch's
  o.memory_budget = batch_bytes - 1;
  ASSERT_OK(Loader::Open(dir_->path(), o, &l));
  const Status st = l->Start(0);
  ASSERT_TRUE(st.IsInvalidArgument()) << st.ToString();
  for (const std::string& want :
       {std::string("memory_budget"), std::string("smaller than one batch"),
        "needs " + std::to_string(batch_bytes) + " bytes",
        "at least " + std::to_string(free.pool_bytes)})
    EXPECT_NE(st.message().find(want), std::string::npos) << want << " in " << st.ToString();
  // A budget that holds one batch but not the pool is the other error, naming the pool.
  o.memory_budget = batch_bytes;
  ASSERT_OK(Loader::Open(dir_->path(), o, &l));
  const Status pool = l->Start(0);
  ASSERT_TRUE(pool.IsInvalidArgument()) << pool.ToString();
  EXPECT_NE(pool.message().find("the batch pool needs"), std::string::npos) << pool.ToString();
  o.memory_budget = free.pool_bytes;  // exactly the pool: fits
  ASSERT_OK(Loader::Open(dir_->path(), o, &l));
  EXPECT_OK(l->Start(0));
}

TEST_F(LoaderTest, Float16AndBFloat16AreTheFloat32BatchesRounded) {
  LoaderOptions o = Options();
  std::unique_ptr<Loader> l32, l16, lb16;
  ASSERT_OK(Loader::Open(dir_->path(), o, &l32));
  o.dtype = DType::kFloat16;
  ASSERT_OK(Loader::Open(dir_->path(), o, &l16));
  o.dtype = DType::kBFloat16;
  ASSERT_OK(Loader::Open(dir_->path(), o, &lb16));
  ASSERT_OK(l32->Start(0));
  ASSERT_OK(l16->Start(0));
  ASSERT_OK(lb16->Start(0));
  const Batch *a, *h, *bf;
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK(l32->Next(&a));
    ASSERT_OK(l16->Next(&h));
    ASSERT_OK(lb16->Next(&bf));
    ASSERT_EQ(h->features_bytes() * 2, a->features_bytes());
    const size_t n = a->features_bytes() / 4;
    const uint16_t* hv = static_cast<const uint16_t*>(h->features());
    const uint16_t* bv = static_cast<const uint16_t*>(bf->features());
    std::vector<uint16_t> want_h(n), want_b(n);
    features::FloatToHalf(a->features_f32(), n, want_h.data());
    features::FloatToBFloat16(a->features_f32(), n, want_b.data());
    for (size_t k = 0; k < n; ++k) {
      ASSERT_EQ(hv[k], want_h[k]);
      ASSERT_EQ(bv[k], want_b[k]);
    }
  }
}

TEST(LoaderText, PassesTextAndTokensThroughPadded) {
  sluice::testing::TempDir dir;
  loader::testing::WriteTextDataset(dir.path(), 90, true);
  LoaderOptions o;
  o.threads = 2;
  o.batching.max_frames = 60;  // token ids per batch
  std::unique_ptr<Loader> l;
  ASSERT_OK(Loader::Open(dir.path(), o, &l));
  ASSERT_OK(l->Start(0));
  const Batch* b;
  size_t rows = 0;
  while (l->Next(&b).ok() && b != nullptr) {
    EXPECT_EQ(b->dim(), 0);
    EXPECT_EQ(b->features_bytes(), 0u);
    for (size_t i = 0; i < b->size(); ++i) {
      const int idx = std::stoi(std::string(b->keys()[i]).substr(3));
      const std::string text = b->texts()[i];
      EXPECT_EQ(text.rfind(loader::testing::RecordText(idx), 0), 0u);
      const int32_t n = b->token_lengths()[i];
      ASSERT_EQ(n, static_cast<int32_t>(text.size() / 4 + 1));
      for (int32_t k = 0; k < b->max_tokens(); ++k)
        EXPECT_EQ(b->tokens()[i * b->max_tokens() + k], k < n ? idx + k : 0);
    }
    ++rows;
  }
  EXPECT_GT(rows, 1u);
  // Start reserved every pooled batch's ids from the index's counts: none grew mid-epoch.
  EXPECT_EQ(l->stats().pool_allocations, 0u);
}

TEST(LoaderText, TokenizerHookFillsTokensWhenRecordsHaveNone) {
  sluice::testing::TempDir dir;
  loader::testing::WriteTextDataset(dir.path(), 30, false);
  LoaderOptions o;
  o.threads = 2;
  o.tokenizer = [](std::string_view text, std::vector<int32_t>* ids) {
    ids->assign(text.begin(), text.end());  // bytes as ids
    return Status::OK();
  };
  std::unique_ptr<Loader> l;
  ASSERT_OK(Loader::Open(dir.path(), o, &l));
  ASSERT_OK(l->Start(0));
  const Batch* b;
  ASSERT_OK(l->Next(&b));
  ASSERT_NE(b, nullptr);
  for (size_t i = 0; i < b->size(); ++i)
    EXPECT_EQ(static_cast<size_t>(b->token_lengths()[i]), b->texts()[i].size());
}

TEST(LoaderFlac, FlacRecordsDecodeToTheSameFeatures) {
  sluice::testing::TempDir dir;
  AudioDatasetSpec spec;
  spec.records = 20;
  spec.flac = true;
  loader::testing::WriteAudioDataset(dir.path(), spec);
  LoaderOptions o;
  o.threads = 2;
  std::unique_ptr<Loader> l;
  ASSERT_OK(Loader::Open(dir.path(), o, &l));
  ASSERT_OK(l->Start(0));
  features::FbankComputer fbank(features::FbankOptions{});
  features::Workspace ws;
  const Batch* b;
  size_t rows = 0;
  Status st;
  while ((st = l->Next(&b)).ok() && b != nullptr) {
    for (size_t i = 0; i < b->size(); ++i, ++rows) {
      const int idx = std::stoi(std::string(b->keys()[i]).substr(3));
      const std::vector<int16_t> pcm = loader::testing::RecordSamples(spec, idx);
      std::vector<float> x(pcm.size()), want;
      features::Pcm16ToFloat(pcm.data(), pcm.size(), x.data(), 1.0f);
      fbank.Compute(x.data(), x.size(), &ws, &want);
      ASSERT_EQ(0, std::memcmp(b->features_f32() + i * b->frames() * b->dim(), want.data(),
                               want.size() * 4));
    }
  }
  ASSERT_OK(st);
  EXPECT_EQ(rows, 20u);
}

TEST(LoaderPrecomputed, UsesTheStoredFeaturesWhenTheManifestHasThem) {
  sluice::testing::TempDir dir;
  AudioDatasetSpec spec;
  spec.records = 20;
  spec.precomputed = true;
  loader::testing::WriteAudioDataset(dir.path(), spec);
  LoaderOptions o;
  o.threads = 2;
  o.dtype = DType::kFloat16;  // float16 in, float16 out: the stored bits exactly
  std::unique_ptr<Loader> l;
  ASSERT_OK(Loader::Open(dir.path(), o, &l));
  EXPECT_EQ(l->feature_info().kind, FeatureKind::kPrecomputed);
  ASSERT_OK(l->Start(0));
  const Batch* b;
  size_t rows = 0;
  Status st;
  while ((st = l->Next(&b)).ok() && b != nullptr) {
    for (size_t i = 0; i < b->size(); ++i, ++rows) {
      const int idx = std::stoi(std::string(b->keys()[i]).substr(3));
      uint32_t frames = 0;
      const std::vector<uint16_t> want = loader::testing::RecordFeaturesF16(spec, idx, &frames);
      ASSERT_EQ(b->lengths()[i], static_cast<int32_t>(frames));
      const uint16_t* row = static_cast<const uint16_t*>(b->features()) + i * b->frames() * 80;
      ASSERT_EQ(0, std::memcmp(row, want.data(), want.size() * 2));
    }
  }
  ASSERT_OK(st);
  EXPECT_EQ(rows, 20u);
  // Asked not to, it computes fbank from the audio instead.
  o.use_precomputed = false;
  ASSERT_OK(Loader::Open(dir.path(), o, &l));
  EXPECT_EQ(l->feature_info().kind, FeatureKind::kFbank);
}

TEST(LoaderErrors, AnExceptionInAStageBecomesAStatus) {
  sluice::testing::TempDir dir;
  loader::testing::WriteTextDataset(dir.path(), 200, false);
  LoaderOptions o;
  o.threads = 2;
  o.batching.max_frames = 100;
  o.tokenizer = [](std::string_view text, std::vector<int32_t>* ids) -> Status {
    if (text.find("number 150") != std::string_view::npos) throw std::runtime_error("boom");
    ids->assign(1, 7);
    return Status::OK();
  };
  std::unique_ptr<Loader> l;
  ASSERT_OK(Loader::Open(dir.path(), o, &l));
  for (int round = 0; round < 2; ++round) {  // and the loader is usable after it
    ASSERT_OK(l->Start(0));
    const Batch* b;
    Status st;
    size_t n = 0;
    while ((st = l->Next(&b)).ok() && b != nullptr) ++n;
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message().find("boom"), std::string::npos) << st.ToString();
    EXPECT_LT(n, l->num_batches());
    EXPECT_FALSE(l->Next(&b).ok());  // the error stays
  }
}

TEST(LoaderOpen, RejectsABadRankAndAMissingDataset) {
  sluice::testing::TempDir dir;
  std::unique_ptr<Loader> l;
  LoaderOptions o;
  o.rank = 2;
  o.world = 2;
  EXPECT_TRUE(Loader::Open(dir.path(), o, &l).IsInvalidArgument());
  EXPECT_FALSE(Loader::Open(dir.Join("nope"), LoaderOptions(), &l).ok());
}

}  // namespace
}  // namespace sluice::loader
