// Small pieces: half floats, resume state, the injectable allocator.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>

#include "loader/loader.h"
#include "loader/resume.h"
#include "test_dataset.h"
#include "test_util.h"

namespace sluice::loader {
namespace {

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
