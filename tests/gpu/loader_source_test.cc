// The real loader through the feeder (fake device): what reaches the device equals what the loader
// yields directly, batch for batch, with pinned (here: fallback) batch memory and the loader's own
// recycling, for consumer_batches 1 and 2.
#include "gpu/loader_source.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "fake_feed_backend.h"
#include "gpu/pinned_allocator.h"
#include "loader/loader.h"
#include "test_dataset.h"
#include "test_util.h"
#include "assert_ok.h"

namespace sluice::gpu {
namespace {

uint64_t Fnv(uint64_t h, const void* p, size_t n) {
  const unsigned char* c = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; ++i) h = (h ^ c[i]) * 1099511628211ull;
  return h;
}

uint64_t HashArrays(const void* features, size_t bytes, const int32_t* lengths, size_t rows) {
  return Fnv(Fnv(14695981039346656037ull, features, bytes), lengths, rows * sizeof(int32_t));
}

loader::LoaderOptions Options(int consumer_batches) {
  loader::LoaderOptions o;
  o.threads = 2;
  o.seed = 5;
  o.batching.max_frames = 1500;
  o.batching.shuffle_window = 32;
  o.consumer_batches = consumer_batches;
  o.allocator = MakePinnedAllocator();
  return o;
}

TEST(LoaderSource, DeviceBatchesEqualTheLoadersOwn) {
  sluice::testing::TempDir dir;
  loader::testing::AudioDatasetSpec spec;
  spec.records = 60;
  loader::testing::WriteAudioDataset(dir.path(), spec);

  std::vector<uint64_t> direct;
  {
    std::unique_ptr<loader::Loader> l;
    ASSERT_OK(loader::Loader::Open(dir.path(), Options(1), &l));
    ASSERT_OK(l->Start(0));
    const loader::Batch* b;
    while (l->Next(&b).ok() && b != nullptr)
      direct.push_back(
          HashArrays(b->features(), b->features_bytes(), b->lengths().data(), b->size()));
  }
  ASSERT_FALSE(direct.empty());

  for (int holds : {1, 2}) {
    std::unique_ptr<loader::Loader> l;
    ASSERT_OK(loader::Loader::Open(dir.path(), Options(holds), &l));
    ASSERT_OK(l->Start(0));
    LoaderSource source(l.get());
    EXPECT_EQ(source.holds(), holds);
    auto fake = std::make_unique<testing::FakeFeedBackend>(
        testing::FakeFeedBackend::Progress::kRandom, holds);
    testing::FakeFeedBackend* raw = fake.get();
    FeederOptions o;
    o.capacity = CapacityForPlan(*l);
    EXPECT_GT(o.capacity.feature_bytes, 0u);
    std::unique_ptr<Feeder> feeder;
    ASSERT_OK(Feeder::Create(std::move(fake), &source, o, &feeder));
    std::vector<uint64_t> fed;
    const DeviceBatch* b;
    while (true) {
      const Status st = feeder->Next(&b);
      ASSERT_OK(st);
      if (b == nullptr) break;
      const DeviceBatch v = *b;
      raw->EnqueueCompute([&fed, v] {
        fed.push_back(HashArrays(v.features, v.features_bytes, v.lengths, v.rows));
      });
    }
    EXPECT_EQ(fed, direct) << "consumer_batches " << holds;
    EXPECT_EQ(feeder->stats().grow_allocations, 0u) << "CapacityForPlan covers every batch";
  }
}

}  // namespace
}  // namespace sluice::gpu
