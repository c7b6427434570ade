// The real loader through the feeder: on a fake device, what reaches the device equals what the
// loader yields directly, batch for batch, with pinned (here: fallback) batch memory and the
// loader's own recycling, for consumer_batches 1 and 2; on the device (a GPU, or the SIMT build's
// CPU device backend), with a consumer that computes for a set time on the compute stream, the
// batches arrive intact, the data wait is about zero and nothing is allocated after Create. A
// conversation dataset's batches, packed and padded, reach the device with every array (ids,
// positions, cu_seqlens, loss mask, the audio turns' features, lengths and spans), byte for byte,
// in buffers the epoch plan sized.
#include "gpu/loader_source.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "assert_ok.h"
#include "conversation_dataset.h"
#include "fake_feed_backend.h"
#include "gpu/batch_arrays.h"
#include "gpu/cuda_feed_backend.h"
#include "gpu/device.h"
#include "gpu/kernels.h"
#include "gpu/pinned_allocator.h"
#include "loader/loader.h"
#include "skip_without_gpu.h"
#include "test_dataset.h"
#include "test_util.h"

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

// The hashes of epoch 0's batches, straight from the loader.
std::vector<uint64_t> DirectHashes(const std::string& dir, const loader::LoaderOptions& o) {
  std::vector<uint64_t> hashes;
  std::unique_ptr<loader::Loader> l;
  EXPECT_OK(loader::Loader::Open(dir, o, &l));
  if (l == nullptr || !l->Start(0).ok()) return hashes;
  const loader::Batch* b;
  while (l->Next(&b).ok() && b != nullptr)
    hashes.push_back(
        HashArrays(b->features(), b->features_bytes(), b->lengths().data(), b->size()));
  return hashes;
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
  spec.with_tokens = true;  // the capacity covers the token ids too
  loader::testing::WriteAudioDataset(dir.path(), spec);

  const std::vector<uint64_t> direct = DirectHashes(dir.path(), Options(1));
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

TEST(LoaderSource, OnTheDeviceBatchesArriveIntactWithoutWaitOrAllocation) {
  SKIP_WITHOUT_GPU();
  sluice::testing::TempDir dir;
  loader::testing::AudioDatasetSpec spec;
  spec.records = 60;
  spec.precomputed = true;  // stored fbank: the loader outpaces the consumer on any machine
  loader::testing::WriteAudioDataset(dir.path(), spec);
  loader::LoaderOptions lo = Options(2);
  const std::vector<uint64_t> direct = DirectHashes(dir.path(), lo);
  ASSERT_GT(direct.size(), 4u);

  std::unique_ptr<loader::Loader> l;
  ASSERT_OK(loader::Loader::Open(dir.path(), lo, &l));
  ASSERT_OK(l->Start(0));
  LoaderSource source(l.get());
  std::unique_ptr<FeedBackend> be;
  ASSERT_OK(MakeCudaFeedBackend(CudaFeedOptions(), &be));
  FeederOptions o;
  o.capacity = CapacityForPlan(*l);
  std::unique_ptr<Feeder> feeder;
  ASSERT_OK(Feeder::Create(std::move(be), &source, o, &feeder));
  // A step of 30 ms: far longer than the loader needs for a batch of stored features, and long
  // enough that a host thread preempted on a loaded 2-core runner does not look like a wait.
  const double step = 30e-3;
  std::vector<uint64_t> fed;
  std::vector<unsigned char> features;
  std::vector<int32_t> lengths;
  const DeviceBatch* b;
  while (true) {
    ASSERT_OK(feeder->Next(&b));
    if (b == nullptr) break;
    // Read back through the compute stream, after the copy the feeder made it wait for; from
    // pageable memory the copy is synchronous, so the bytes are there when it returns.
    features.resize(b->features_bytes);
    lengths.resize(b->rows);
    ASSERT_OK(CopyDeviceToHost(features.data(), b->features, features.size(),
                               feeder->compute_stream()));
    ASSERT_OK(CopyDeviceToHost(lengths.data(), b->lengths, lengths.size() * sizeof(int32_t),
                               feeder->compute_stream()));
    fed.push_back(HashArrays(features.data(), features.size(), lengths.data(), b->rows));
    ASSERT_OK(SpinOnStream(feeder->compute_stream(), step));
  }
  ASSERT_OK(SynchronizeDevice());
  EXPECT_EQ(fed, direct) << "every batch reached the device byte for byte, in order";
  const FeedStats s = feeder->stats();
  ASSERT_EQ(s.timed_steps, direct.size() - 1);
  EXPECT_EQ(s.device_allocations, s.setup_allocations) << "no allocation after Create";
  EXPECT_EQ(s.grow_allocations, 0u);
  const double mean = s.data_wait_seconds / s.timed_steps;
#if defined(__SANITIZE_THREAD__)
  // ThreadSanitizer slows the loader and the copies 5-15x: the run above still checks the bytes
  // and the hand-offs for races (docs/testing.md, "ThreadSanitizer"), the timing says nothing.
  GTEST_SKIP() << "timing not checked under ThreadSanitizer; mean data wait " << mean * 1e6
               << " us per step";
#endif
  EXPECT_LT(mean, 0.05 * step) << "mean data wait " << mean * 1e6 << " us per step";
}

// A batch's arrays by name, each as bytes.
using Arrays = std::map<std::string, std::vector<unsigned char>>;

void Put(Arrays* out, const std::string& name, const void* p, size_t bytes) {
  if (p == nullptr) return;
  const unsigned char* c = static_cast<const unsigned char*>(p);
  (*out)[name].assign(c, c + bytes);
}

// Every array of `b`, read through loader::Batch's own accessors (batch.h), not through
// HostBatchOf: what the device must receive.
Arrays LoaderArrays(const loader::Batch& b) {
  Arrays a;
  const size_t rows = b.size(), i32 = sizeof(int32_t);
  const size_t ids = rows * static_cast<size_t>(b.max_tokens());
  const size_t columns = rows * static_cast<size_t>(b.seq_len());
  Put(&a, "features", b.features(), b.features_bytes());
  Put(&a, "lengths", b.lengths().data(), rows * i32);
  if (b.max_tokens() > 0) {
    Put(&a, "tokens", b.tokens(), ids * i32);
    Put(&a, "token_lengths", b.token_lengths().data(), rows * i32);
  }
  Put(&a, "positions", b.positions(), columns * i32);
  Put(&a, "doc_ids", b.doc_ids(), columns * sizeof(int64_t));
  Put(&a, "loss_mask", b.loss_mask(), b.seq_len() > 0 ? columns : ids);
  if (!b.cu_seqlens().empty())
    Put(&a, "cu_seqlens", b.cu_seqlens().data(), b.cu_seqlens().size_bytes());
  Put(&a, "row_cu_seqlens", b.row_cu_seqlens(), (columns + rows) * i32);
  if (b.num_audio() > 0) {
    Put(&a, "audio_features", b.audio_features(), b.audio_features_bytes());
    Put(&a, "audio_lengths", b.audio_lengths().data(), b.audio_lengths().size_bytes());
    Put(&a, "audio_spans", b.audio_spans().data(), b.audio_spans().size_bytes());
  }
  return a;
}

// Every array of a device batch whose memory the host can read (the fake backend's).
Arrays DeviceArrays(const DeviceBatch& v) {
  Arrays a;
  ForEachArray(v, [&](BatchArray which, const auto& p, size_t bytes) {
    Put(&a, BatchArrayName(which), p, bytes);
  });
  return a;
}

// The conversation dataset of the loader's conversation tests, with its template.
class ConversationFeedTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new sluice::testing::TempDir();
    loader::conversation_testing::WriteConversations(dir_->Join("data"), false);
    sluice::testing::WriteFile(dir_->Join("template.json"),
                               loader::conversation_testing::kTemplate);
  }
  static void TearDownTestSuite() { delete dir_; }

  // Packed rows of whole conversations (conversation_audio_test.cc's options), or padded rows in
  // 2-D buckets.
  static loader::LoaderOptions Options(bool packed) {
    loader::LoaderOptions o;
    o.threads = 2;
    o.seed = 5;
    o.consumer_batches = 2;
    o.allocator = MakePinnedAllocator();
    o.batching.shuffle_window = 8;
    if (packed) {
      o.packing.seq_len = loader::conversation_testing::kSeqLen;
      o.packing.batch_size = 2;
      o.packing.shuffle_window = 4;
      o.packing.chunk_tokens = 300;
      o.packing.pack_mode = loader::PackMode::kBestFit;
      o.packing.fit_window = 12;
      o.packing.split_long = false;
      o.packing.too_long = loader::TooLong::kSkip;
    } else {
      o.batching.bucket_2d = true;
      o.batching.num_buckets = 3;
      o.batching.max_frames = 0;
      o.batching.max_padded_sum = 1200;
    }
    o.conversation.chat_template = dir_->Join("template.json");
    o.conversation.encoder_frames = "fastconformer";
    return o;
  }

  // Epoch 0's batches straight from the loader.
  static std::vector<Arrays> Direct(const loader::LoaderOptions& o) {
    std::vector<Arrays> out;
    std::unique_ptr<loader::Loader> l;
    EXPECT_OK(loader::Loader::Open(dir_->Join("data"), o, &l));
    if (l == nullptr || !l->Start(0).ok()) return out;
    const loader::Batch* b;
    while (l->Next(&b).ok() && b != nullptr) out.push_back(LoaderArrays(*b));
    return out;
  }

  static sluice::testing::TempDir* dir_;
};
sluice::testing::TempDir* ConversationFeedTest::dir_ = nullptr;

TEST_F(ConversationFeedTest, EveryArrayReachesTheDeviceInBuffersThePlanSized) {
  for (bool packed : {true, false}) {
    SCOPED_TRACE(packed ? "packed" : "padded");
    const loader::LoaderOptions lo = Options(packed);
    const std::vector<Arrays> direct = Direct(lo);
    ASSERT_GT(direct.size(), 3u);
    // The arrays these batches carry: the test would prove little if they were absent.
    size_t audio = 0;
    for (const Arrays& a : direct) {
      ASSERT_TRUE(a.count("tokens") && a.count("loss_mask"));
      EXPECT_EQ(a.count("positions") + a.count("cu_seqlens") + a.count("row_cu_seqlens") +
                    a.count("doc_ids"),
                packed ? 4u : 0u);
      audio += a.count("audio_spans") ? a.at("audio_spans").size() / (3 * sizeof(int32_t)) : 0;
    }
    EXPECT_GT(audio, 0u);

    std::unique_ptr<loader::Loader> l;
    ASSERT_OK(loader::Loader::Open(dir_->Join("data"), lo, &l));
    ASSERT_OK(l->Start(0));
    LoaderSource source(l.get());
    auto fake =
        std::make_unique<testing::FakeFeedBackend>(testing::FakeFeedBackend::Progress::kRandom, 3);
    testing::FakeFeedBackend* raw = fake.get();
    FeederOptions o;
    o.capacity = CapacityForPlan(*l);
    std::unique_ptr<Feeder> feeder;
    ASSERT_OK(Feeder::Create(std::move(fake), &source, o, &feeder));
    std::vector<Arrays> fed;
    size_t most_audio = 0, most_audio_bytes = 0;
    const DeviceBatch* b;
    while (true) {
      ASSERT_OK(feeder->Next(&b));
      if (b == nullptr) break;
      const DeviceBatch v = *b;
      most_audio = std::max(most_audio, v.num_audio);
      most_audio_bytes = std::max(most_audio_bytes, v.audio_features_bytes);
      raw->EnqueueCompute([&fed, v] { fed.push_back(DeviceArrays(v)); });
    }
    ASSERT_EQ(fed.size(), direct.size());
    for (size_t k = 0; k < fed.size(); ++k) {
      for (const auto& [name, bytes] : direct[k]) {
        const auto it = fed[k].find(name);
        if (it == fed[k].end()) {
          ADD_FAILURE() << "batch " << k << ": " << name << " did not reach the device";
          continue;
        }
        EXPECT_TRUE(it->second == bytes) << "batch " << k << ": " << name << " differs";
      }
      EXPECT_EQ(fed[k].size(), direct[k].size()) << "batch " << k << ": arrays it does not have";
    }
    // The plan's largest batch, from the index: exactly the most audio turns of a batch, and
    // room enough that no buffer grew.
    EXPECT_EQ(o.capacity.audio, most_audio);
    EXPECT_EQ(o.capacity.audio_feature_bytes, most_audio_bytes);
    const FeedStats s = feeder->stats();
    EXPECT_EQ(s.grow_allocations, 0u) << "CapacityForPlan covers every array of every batch";
    EXPECT_EQ(s.device_allocations, s.setup_allocations);
  }
}

// The same on the device (a GPU, or the SIMT build's CPU device): each array read back through
// the compute stream after the copy the feeder made it wait for.
TEST_F(ConversationFeedTest, OnTheDeviceEveryArrayArrivesIntact) {
  SKIP_WITHOUT_GPU();
  for (bool packed : {true, false}) {
    SCOPED_TRACE(packed ? "packed" : "padded");
    const loader::LoaderOptions lo = Options(packed);
    const std::vector<Arrays> direct = Direct(lo);
    ASSERT_GT(direct.size(), 3u);
    std::unique_ptr<loader::Loader> l;
    ASSERT_OK(loader::Loader::Open(dir_->Join("data"), lo, &l));
    ASSERT_OK(l->Start(0));
    LoaderSource source(l.get());
    std::unique_ptr<FeedBackend> be;
    ASSERT_OK(MakeCudaFeedBackend(CudaFeedOptions(), &be));
    FeederOptions o;
    o.capacity = CapacityForPlan(*l);
    std::unique_ptr<Feeder> feeder;
    ASSERT_OK(Feeder::Create(std::move(be), &source, o, &feeder));
    std::vector<Arrays> fed;
    const DeviceBatch* b;
    while (true) {
      ASSERT_OK(feeder->Next(&b));
      if (b == nullptr) break;
      Arrays a;
      Status st;
      ForEachArray(*b, [&](BatchArray which, const auto& p, size_t bytes) {
        if (p == nullptr || !st.ok()) return;
        std::vector<unsigned char>& dst = a[BatchArrayName(which)];
        dst.resize(bytes);
        // From pageable memory the copy is synchronous: the bytes are there when it returns.
        st = CopyDeviceToHost(dst.data(), p, bytes, feeder->compute_stream());
      });
      ASSERT_OK(st);
      fed.push_back(std::move(a));
    }
    ASSERT_OK(SynchronizeDevice());
    ASSERT_EQ(fed.size(), direct.size());
    for (size_t k = 0; k < fed.size(); ++k)
      EXPECT_TRUE(fed[k] == direct[k]) << "batch " << k << " differs on the device";
    const FeedStats s = feeder->stats();
    EXPECT_EQ(s.device_allocations, s.setup_allocations) << "no allocation after Create";
  }
}

}  // namespace
}  // namespace sluice::gpu
