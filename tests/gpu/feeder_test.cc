// The feeder's buffer lifecycle against the fake device (no GPU needed): every batch arrives
// intact and in order under adversarial stream progress, a host buffer is never recycled while a
// copy reads it, a device buffer is never overwritten before the step that reads it is over, and
// steady state allocates nothing; all of it for every array a batch may have.
#include "gpu/feeder.h"

#include <gtest/gtest.h>

#include <memory>
#include <tuple>

#include "assert_ok.h"
#include "fake_feed_backend.h"
#include "gpu/batch_arrays.h"
#include "gpu/pinned_allocator.h"
#include "pattern_source.h"
#include "tracing_backend.h"

namespace sluice::gpu {
namespace {

using testing::FakeFeedBackend;
using testing::PatternShape;
using testing::PatternSource;
using testing::TracingBackend;

// Batches with every array a HostBatch may have: those of packed and conversation batches too.
constexpr PatternShape kMax{6, 20, 3, 5, /*seq_len=*/8, /*audio=*/3, /*audio_frames=*/10};

FeedCapacity FullCapacity() {
  FeedCapacity c;
  c.feature_bytes = kMax.rows * kMax.frames * kMax.dim * sizeof(float);
  c.rows = kMax.rows;
  c.token_ids = kMax.rows * kMax.max_tokens;
  c.packed_columns = kMax.rows * kMax.seq_len;
  c.loss_mask_bytes = c.packed_columns;
  c.audio = kMax.audio;
  c.audio_feature_bytes = kMax.audio * kMax.audio_frames * kMax.dim * sizeof(float);
  return c;
}

// Checks batch i's device arrays when the fake compute stream reaches the step.
struct Checker {
  uint64_t steps_checked = 0;
  uint64_t bad_batches = 0;
  uint64_t out_of_order = 0;
  uint64_t next_index = 0;

  void Check(const DeviceBatch& b) {
    if (b.index != next_index) ++out_of_order;
    next_index = b.index + 1;
    const PatternShape s = testing::ShapeOf(b.index, kMax);
    bool ok = b.rows == s.rows && b.frames == s.frames && b.dim == s.dim;
    const float* f = static_cast<const float*>(b.features);
    const size_t n = s.rows * s.frames * s.dim;
    for (size_t p = 0; ok && p < n; ++p) ok = f[p] == testing::FeatureValue(b.index, p);
    for (size_t r = 0; ok && r < s.rows; ++r) ok = b.lengths[r] == testing::LengthValue(b.index, r);
    if (s.max_tokens > 0) {
      ok = ok && b.tokens != nullptr && b.max_tokens == s.max_tokens;
      for (size_t p = 0; ok && p < s.rows * s.max_tokens; ++p)
        ok = b.tokens[p] == testing::TokenValue(b.index, p);
    } else {
      ok = ok && b.tokens == nullptr;
    }
    // The packed and audio arrays: present exactly where the shape has them, byte for byte.
    ok = ok && b.seq_len == s.seq_len && b.num_audio == s.audio;
    ForEachArray(b, [&](BatchArray which, const auto& p, size_t bytes) {
      if (which < BatchArray::kPositions) return;
      const bool packed = which < BatchArray::kAudioFeatures;
      ok = ok && (p != nullptr) == (packed ? s.seq_len > 0 : s.audio > 0);
      const unsigned char* c = reinterpret_cast<const unsigned char*>(p);
      for (size_t q = 0; ok && q < bytes; ++q)
        ok = c[q] == testing::PatternByte(b.index, static_cast<int>(which), q);
    });
    if (!ok) ++bad_batches;
    ++steps_checked;
  }
};

struct FeedRun {
  Checker checker;
  uint64_t recycle_violations = 0;
  size_t live_allocations = 0;  // device buffers held at the end, before the feeder went away
  FeedStats stats;
};

// Feeds `epochs` epochs of `batches` through a feeder over `fake`, a compute op per step.
void Feed(FakeFeedBackend* fake_raw, std::unique_ptr<FeedBackend> backend, int holds, int slots,
          uint64_t batches, int epochs, FeedCapacity capacity, FeedRun* run) {
  PatternSource source(holds, batches, kMax, MakePinnedAllocator(/*force_fallback=*/true));
  source.set_on_recycle([&](const void* p, size_t n) {
    run->recycle_violations += fake_raw->PendingCopiesFrom(p, n);
  });
  FeederOptions o;
  o.capacity = capacity;
  o.device_buffers = slots;
  std::unique_ptr<Feeder> feeder;
  ASSERT_OK(Feeder::Create(std::move(backend), &source, o, &feeder));
  for (int e = 0; e < epochs; ++e) {
    if (e > 0) {
      source.Restart();
      ASSERT_OK(feeder->Rewind());
      run->checker.next_index = 0;
    }
    uint64_t got = 0;
    while (true) {
      const DeviceBatch* b = nullptr;
      const Status st = feeder->Next(&b);
      ASSERT_OK(st);
      if (b == nullptr) break;
      ++got;
      const DeviceBatch copy = *b;  // the view changes when the slot is refilled
      fake_raw->EnqueueCompute([run, copy] { run->checker.Check(copy); });
    }
    EXPECT_EQ(got, batches);
  }
  run->stats = feeder->stats();
  run->live_allocations = fake_raw->live_allocations();
}

using Params = std::tuple<FakeFeedBackend::Progress, int /*holds*/, int /*slots*/>;
class FeederLifecycle : public ::testing::TestWithParam<Params> {};

TEST_P(FeederLifecycle, EveryBatchArrivesIntactInOrderWithoutSteadyStateAllocations) {
  const auto [progress, holds, slots] = GetParam();
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    auto fake = std::make_unique<FakeFeedBackend>(progress, seed);
    FakeFeedBackend* raw = fake.get();
    FeedRun run;
    Feed(raw, std::move(fake), holds, slots, /*batches=*/40, /*epochs=*/2, FullCapacity(), &run);
    EXPECT_EQ(run.checker.steps_checked, 80u);
    EXPECT_EQ(run.checker.bad_batches, 0u) << "seed " << seed;
    EXPECT_EQ(run.checker.out_of_order, 0u);
    EXPECT_EQ(run.recycle_violations, 0u) << "a host buffer was recycled while a copy read it";
    EXPECT_EQ(run.stats.steps, 80u);
    EXPECT_EQ(run.stats.setup_allocations, static_cast<uint64_t>(slots));
    EXPECT_EQ(run.stats.device_allocations, run.stats.setup_allocations);
    EXPECT_EQ(run.stats.grow_allocations, 0u);
    EXPECT_EQ(run.stats.timed_steps, 78u);  // all but each epoch's first step
    EXPECT_GE(run.stats.data_wait_seconds, 0.0);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Schedules, FeederLifecycle,
    ::testing::Combine(::testing::Values(FakeFeedBackend::Progress::kRandom,
                                         FakeFeedBackend::Progress::kCopyFirst,
                                         FakeFeedBackend::Progress::kComputeFirst,
                                         FakeFeedBackend::Progress::kLazy),
                       ::testing::Values(1, 2, 3), ::testing::Values(2, 3)));

TEST(Feeder, CopiesWaitForComputeAndComputeWaitsForCopies) {
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    FakeFeedBackend fake(FakeFeedBackend::Progress::kRandom, seed);
    auto tracing = std::make_unique<TracingBackend>(&fake);
    TracingBackend* tr = tracing.get();
    // The fake stays owned here; the feeder owns only the decorator.
    PatternSource source(2, 30, kMax, MakePinnedAllocator(true));
    FeederOptions o;
    o.capacity = FullCapacity();
    o.device_buffers = 2;
    std::unique_ptr<Feeder> feeder;
    ASSERT_OK(Feeder::Create(std::move(tracing), &source, o, &feeder));
    std::vector<EventId> start, end;
    while (true) {
      const DeviceBatch* b = nullptr;
      ASSERT_OK(feeder->Next(&b));
      if (b == nullptr) break;
      EventId e;
      ASSERT_OK(tr->Marker(FeedStream::kCompute, &e));
      start.push_back(e);
      fake.EnqueueCompute([] {}, 2e-6);
      ASSERT_OK(tr->Marker(FeedStream::kCompute, &e));
      end.push_back(e);
    }
    ASSERT_OK(fake.SynchronizeAll());
    ASSERT_EQ(tr->copy_end().size(), 30u);
    for (size_t k = 0; k < start.size(); ++k) {
      double copied, began;
      ASSERT_OK(tr->Time(tr->copy_end()[k], &copied));
      ASSERT_OK(tr->Time(start[k], &began));
      EXPECT_LE(copied, began) << "step " << k << " started before its copy ended";
      if (k + 2 < tr->copy_begin().size()) {
        double done, refill;
        ASSERT_OK(tr->Time(end[k], &done));
        ASSERT_OK(tr->Time(tr->copy_begin()[k + 2], &refill));
        EXPECT_LE(done, refill) << "buffer of step " << k << " refilled before the step ended";
      }
    }
    feeder.reset();
  }
}

TEST(Feeder, GrowsOnlyForBatchesBiggerThanTheCapacityThenStops) {
  auto fake = std::make_unique<FakeFeedBackend>(FakeFeedBackend::Progress::kRandom, 7);
  FakeFeedBackend* raw = fake.get();
  FeedCapacity small;
  small.feature_bytes = 64;
  small.rows = 1;
  FeedRun run;
  Feed(raw, std::move(fake), 2, 3, 40, 3, small, &run);
  EXPECT_EQ(run.checker.bad_batches, 0u);
  EXPECT_EQ(run.recycle_violations, 0u);
  EXPECT_GT(run.stats.grow_allocations, 0u);
  // At most one growth per array per slot to reach each new maximum; then none.
  EXPECT_LE(run.stats.grow_allocations, 3u * 3u * 8u);
  EXPECT_EQ(run.live_allocations, 3u);
}

TEST(Feeder, SecondEpochAllocatesNothingAfterGrowing) {
  auto fake = std::make_unique<FakeFeedBackend>(FakeFeedBackend::Progress::kRandom, 3);
  FakeFeedBackend* raw = fake.get();
  PatternSource source(1, 25, kMax, MakePinnedAllocator(true));
  FeederOptions o;  // zero capacity: everything grows in the first epoch
  o.device_buffers = 2;
  std::unique_ptr<Feeder> feeder;
  ASSERT_OK(Feeder::Create(std::move(fake), &source, o, &feeder));
  auto epoch = [&] {
    const DeviceBatch* b;
    do {
      ASSERT_OK(feeder->Next(&b));
    } while (b != nullptr);
  };
  epoch();
  const uint64_t after_first = raw->allocations();
  source.Restart();
  ASSERT_OK(feeder->Rewind());
  epoch();
  EXPECT_EQ(raw->allocations(), after_first) << "steady state must allocate nothing";
}

TEST(Feeder, FinishMidEpochSynchronisesSoTheSourceCanRestart) {
  FakeFeedBackend* raw;
  auto fake = std::make_unique<FakeFeedBackend>(FakeFeedBackend::Progress::kLazy, 1);
  raw = fake.get();
  PatternSource source(2, 50, kMax, MakePinnedAllocator(true));
  FeederOptions o;
  o.capacity = FullCapacity();
  std::unique_ptr<Feeder> feeder;
  ASSERT_OK(Feeder::Create(std::move(fake), &source, o, &feeder));
  const DeviceBatch* b;
  for (int i = 0; i < 10; ++i) ASSERT_OK(feeder->Next(&b));
  EXPECT_TRUE(feeder->Rewind().IsInvalidArgument()) << "Rewind needs Finish first";
  ASSERT_OK(feeder->Finish());
  // Nothing is pending: the source may rewrite every buffer now.
  EXPECT_EQ(raw->pending_ops(), 0u);
  source.Restart();
  ASSERT_OK(feeder->Rewind());
  ASSERT_OK(feeder->Next(&b));
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->index, 0u);
}

TEST(Feeder, RejectsFewerThanTwoBuffers) {
  PatternSource source(1, 1, kMax, MakePinnedAllocator(true));
  FeederOptions o;
  o.device_buffers = 1;
  std::unique_ptr<Feeder> feeder;
  const Status st = Feeder::Create(std::make_unique<FakeFeedBackend>(), &source, o, &feeder);
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_NE(st.message().find("device_buffers"), std::string::npos);
}

TEST(Feeder, EmptySourceEndsAtOnce) {
  PatternSource source(1, 0, kMax, MakePinnedAllocator(true));
  std::unique_ptr<Feeder> feeder;
  ASSERT_OK(Feeder::Create(std::make_unique<FakeFeedBackend>(), &source, FeederOptions(), &feeder));
  const DeviceBatch* b = reinterpret_cast<const DeviceBatch*>(1);
  ASSERT_OK(feeder->Next(&b));
  EXPECT_EQ(b, nullptr);
  ASSERT_OK(feeder->Next(&b));
  EXPECT_EQ(b, nullptr);
  EXPECT_EQ(feeder->stats().steps, 0u);
}

}  // namespace
}  // namespace sluice::gpu
