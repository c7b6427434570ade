// Small pieces: half floats, resume state, the injectable allocator.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>

#include "loader/half.h"
#include "loader/loader.h"
#include "loader/resume.h"
#include "test_dataset.h"
#include "test_util.h"

namespace sluice::loader {
namespace {

TEST(Half, KnownValuesAndRoundTrip) {
  EXPECT_EQ(FloatToHalf(0.0f), 0x0000);
  EXPECT_EQ(FloatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(FloatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(FloatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7c00);  // rounds up to inf
  EXPECT_EQ(FloatToHalf(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -25)), 0x0000);  // tie to even
  EXPECT_EQ(FloatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie to even
  EXPECT_EQ(FloatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(std::nanf("")))));
  for (uint32_t h = 0; h < 0x7c00; ++h)
    ASSERT_EQ(FloatToHalf(HalfToFloat(static_cast<uint16_t>(h))), h);
  EXPECT_EQ(FloatToBFloat16(1.0f), 0x3f80);
  EXPECT_EQ(FloatToBFloat16(-3.0f), 0xc040);
}

TEST(ResumeState, RoundTripsAsJsonAndRejectsGarbage) {
  ResumeState s{7, 12345}, back;
  ASSERT_TRUE(ResumeState::FromJson(s.ToJson(), &back).ok());
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
    return DefaultAllocator()->Allocate(bytes, alignment);
  }
  void Free(void* p, size_t bytes, size_t alignment) override {
    ++frees;
    live -= bytes;
    DefaultAllocator()->Free(p, bytes, alignment);
  }
  int allocs = 0, frees = 0;
  int64_t live = 0;
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
    ASSERT_TRUE(Loader::Open(dir.path(), o, &l).ok());
    int after_first = 0;
    for (int pass = 0; pass < 3; ++pass) {
      ASSERT_TRUE(l->Start(0).ok());  // the same epoch again: the pool already fits it
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

}  // namespace
}  // namespace sluice::loader
