// Small pieces: half floats, resume state, the injectable allocator.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "features/window.h"
#include "loader/features_json.h"
#include "loader/loader.h"
#include "loader/resume.h"
#include "test_dataset.h"
#include "test_util.h"
#include "assert_ok.h"

namespace sluice::loader {
namespace {

TEST(ResumeState, RoundTripsAsJsonAndRejectsGarbage) {
  ResumeState s{7, 12345}, back;
  ASSERT_OK(ResumeState::FromJson(s.ToJson(), &back));
  EXPECT_EQ(back, s);
  EXPECT_TRUE(ResumeState::FromJson("{\"epoch\": 1}", &back).IsInvalidArgument());
  EXPECT_TRUE(ResumeState::FromJson("not json", &back).IsInvalidArgument());
  EXPECT_TRUE(ResumeState::FromJson("{\"epoch\": -1, \"batches\": 0}", &back).IsInvalidArgument());
}

// Counts and checks what the loader asks of an injected allocator (gpu/'s pinned memory).
class CountingAllocator : public BatchAllocator {
 public:
  void* Allocate(size_t bytes, size_t alignment) override {
    ++allocs;
    live += bytes;
    peak = std::max(peak, live);
    return DefaultAllocator()->Allocate(bytes, alignment);
  }
  void Free(void* p, size_t bytes, size_t alignment) override {
    ++frees;
    live -= bytes;
    DefaultAllocator()->Free(p, bytes, alignment);
  }
  int allocs = 0, frees = 0;
  int64_t live = 0, peak = 0;
};

TEST(Allocator, BatchMemoryComesFromTheInjectedAllocatorAndIsRecycled) {
  sluice::testing::TempDir dir;
  loader::testing::AudioDatasetSpec spec;
  spec.records = 40;
  loader::testing::WriteAudioDataset(dir.path(), spec);
  auto alloc = std::make_shared<CountingAllocator>();
  {
    LoaderOptions o;
    o.threads = 2;
    o.batching.max_frames = 1500;
    o.allocator = alloc;
    std::unique_ptr<Loader> l;
    ASSERT_OK(Loader::Open(dir.path(), o, &l));
    int after_first = 0;
    for (int pass = 0; pass < 3; ++pass) {
      ASSERT_OK(l->Start(0));  // the same epoch again: the pool already fits it
      const Batch* b;
      while (l->Next(&b).ok() && b != nullptr) {
        EXPECT_EQ(reinterpret_cast<uintptr_t>(b->features()) % kBatchAlignment, 0u);
      }
      EXPECT_EQ(l->stats().pool_allocations, 0u);  // nothing while batches flow
      if (pass == 0) after_first = alloc->allocs;
      else EXPECT_EQ(l->stats().start_allocations, 0u);  // the pool is warm
    }
    EXPECT_EQ(alloc->allocs, after_first);
    EXPECT_GT(alloc->allocs, 0);
  }
  EXPECT_EQ(alloc->allocs, alloc->frees);
  EXPECT_EQ(alloc->live, 0);
}

// The batch memory three epochs take, at most, through a counting allocator; checks that every
// record comes once per epoch and, for record `long_record`, its ids and the rows of its batch.
int64_t PeakBatchMemory(const loader::testing::AudioDatasetSpec& spec, int long_record,
                        uint64_t* long_batch_rows, uint64_t* pool_batches) {
  sluice::testing::TempDir dir;
  loader::testing::WriteAudioDataset(dir.path(), spec);
  auto alloc = std::make_shared<CountingAllocator>();
  LoaderOptions o;
  o.threads = 2;
  o.batching.max_frames = 1500;
  o.allocator = alloc;
  std::unique_ptr<Loader> l;
  EXPECT_OK(Loader::Open(dir.path(), o, &l));
  for (uint64_t epoch = 0; epoch < 3; ++epoch) {
    EXPECT_OK(l->Start(epoch));
    *pool_batches = l->stats().pool_batches;
    const Batch* b;
    int rows = 0;
    while (l->Next(&b).ok() && b != nullptr) {
      rows += static_cast<int>(b->size());
      for (size_t i = 0; i < b->size(); ++i) {
        if (static_cast<int>(b->record_ids()[i]) != long_record) continue;
        *long_batch_rows = b->size();
        const int32_t n = b->token_lengths()[i];
        EXPECT_EQ(n, static_cast<int32_t>(spec.long_tokens));
        int32_t wrong = 0;
        for (int32_t k = 0; k < n; ++k)
          wrong += b->tokens()[i * b->max_tokens() + k] != long_record * 10 + k;
        EXPECT_EQ(wrong, 0);
      }
    }
    EXPECT_EQ(rows, spec.records) << "epoch " << epoch;
    // Growing for the outlier's batch and shrinking back after it; nothing per batch.
    EXPECT_LE(l->stats().pool_allocations, 2u) << "epoch " << epoch;
  }
  l.reset();
  EXPECT_EQ(alloc->live, 0);
  return alloc->peak;
}

// One record with a transcript thousands of times longer than the others must cost about its own
// size, not rows x its length in every pooled batch (it made a 300-clip pool 23x bigger).
TEST(Allocator, OneLongTranscriptTakesOneBufferNotThePool) {
  loader::testing::AudioDatasetSpec spec;
  spec.records = 120;
  spec.with_tokens = true;
  uint64_t rows = 0, buffers = 0;
  const int64_t base = PeakBatchMemory(spec, -1, &rows, &buffers);
  spec.long_transcript = 7;
  spec.long_tokens = 100000;  // 400 KB of ids: over max_padded_tokens (65536) on its own
  const int64_t with_long = PeakBatchMemory(spec, 7, &rows, &buffers);
  EXPECT_EQ(rows, 1u) << "the outlier shares its batch: rows x its length are padded";
  // The outlier's ids once (twice while its buffer grows), and the plan's other batches differ
  // a little: at most one more allocation unit a pooled buffer. Unbounded, this was 21 buffers
  // of 20 rows x 400 KB.
  EXPECT_LE(with_long, base + 2 * int64_t{spec.long_tokens} * 4 +
                           static_cast<int64_t>(buffers * kBatchArrayUnit))
      << "base " << base << " bytes, with one long transcript " << with_long << ", " << buffers
      << " pooled batches";
}

// An allocator with nothing to give, as operator new under ulimit -v or a cgroup limit.
class EmptyAllocator : public BatchAllocator {
 public:
  void* Allocate(size_t, size_t) override { return nullptr; }
  void Free(void*, size_t, size_t) override {}
};

// Out of memory reserving the batch pool said so, but not which option makes the pool smaller.
TEST(Allocator, OutOfMemoryAtStartNamesTheOptionsToLower) {
  sluice::testing::TempDir dir;
  loader::testing::AudioDatasetSpec spec;
  spec.records = 8;
  loader::testing::WriteAudioDataset(dir.path(), spec);
  LoaderOptions o;
  o.threads = 1;
  o.batching.max_frames = 1500;
  o.allocator = std::make_shared<EmptyAllocator>();
  std::unique_ptr<Loader> l;
  ASSERT_OK(Loader::Open(dir.path(), o, &l));
  const Status st = l->Start(0);
  ASSERT_FALSE(st.ok());
  // Named by their table keys, the names of every front end (loader/options.h).
  for (const char* want : {"out of memory reserving", "HINT: lower", "batching.max_frames",
                           "open_batches", "ready_batches", "memory_budget"})
    EXPECT_NE(st.message().find(want), std::string::npos) << want << " in " << st.ToString();
}

// manifest.json "features": what shardify writes, the loader reads back, every option.
TEST(FeaturesJsonTest, EveryOptionRoundTrips) {
  features::FbankOptions f;
  f.sample_frequency = 8000;
  f.frame_length_ms = 20;
  f.frame_shift_ms = 8;
  f.num_mel_bins = 40;
  f.dither = 0.5f;
  f.preemphasis_coefficient = 0.9f;
  f.remove_dc_offset = false;
  f.window_type = features::WindowType::kHamming;
  f.round_to_power_of_two = false;
  f.snip_edges = false;
  f.low_freq = 64;
  f.high_freq = -200;
  f.use_energy = true;
  f.raw_energy = false;
  f.energy_floor = 1;
  f.htk_compat = true;
  f.use_power = false;
  f.use_log_fbank = false;
  features::FbankOptions fr;
  features::SpectrogramOptions unused;
  bool is_fbank = false;
  ASSERT_OK(FeaturesFromJson(FbankFeaturesToJson(f), &is_fbank, &fr, &unused));
  EXPECT_TRUE(is_fbank);
  EXPECT_EQ(FbankFeaturesToJson(fr), FbankFeaturesToJson(f));
  EXPECT_EQ(fr.window_type, features::WindowType::kHamming);
  EXPECT_EQ(fr.energy_floor, 1.0f);

  features::SpectrogramOptions s;
  s.sample_rate = 16000;
  s.window_ms = 25;
  s.hop_ms = 12;
  s.n_fft = 512;
  s.window = features::WindowType::kHanning;
  s.frames = features::FrameConvention::kSnipEdges;
  s.power = true;
  s.log1p = false;
  s.normalize = false;
  features::SpectrogramOptions sr;
  ASSERT_OK(FeaturesFromJson(SpectrogramFeaturesToJson(s), &is_fbank, &fr, &sr));
  EXPECT_FALSE(is_fbank);
  EXPECT_EQ(SpectrogramFeaturesToJson(sr), SpectrogramFeaturesToJson(s));
  EXPECT_EQ(sr.frames, features::FrameConvention::kSnipEdges);

  // Early manifests' names; a kind or window the loader does not know is an error naming it.
  features::FbankOptions old;
  ASSERT_OK(FeaturesFromJson({{"kind", "fbank"}, {"num-mel-bins", 23}, {"frame_length", 30}},
                             &is_fbank, &old, &sr));
  EXPECT_EQ(old.num_mel_bins, 23);
  EXPECT_EQ(old.frame_length_ms, 30);
  EXPECT_TRUE(FeaturesFromJson({{"kind", "mfcc"}}, &is_fbank, &old, &sr).IsUnsupported());
  const Status st =
      FeaturesFromJson({{"kind", "fbank"}, {"window_type", "kaiser"}}, &is_fbank, &old, &sr);
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_NE(st.message().find("kaiser"), std::string::npos) << st.ToString();
}

}  // namespace
}  // namespace sluice::loader
