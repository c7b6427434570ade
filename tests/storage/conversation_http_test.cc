// A conversation dataset (docs/conversations.md) over HTTP from a real nginx on loopback: the
// packed batches, their token ids, masks and the audio of their turns (features, lengths and
// placeholder spans: all in BatchDigest), equal those read from the directory, with and without
// the block cache, and from a cache that holds everything without one more fetch. Skips, saying
// why, where nginx cannot start.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "assert_ok.h"
#include "conversation_dataset.h"
#include "loader/digest.h"
#include "loader/loader.h"
#include "servers.h"
#include "test_util.h"

namespace sluice::storage {
namespace {

using testing::Nginx;

struct ConversationEpoch {
  Status status;
  std::string digest;
  uint64_t batches = 0, audio = 0;  // audio: audio turns over all batches
  loader::EpochStats stats;
};

class ConversationHttpTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new sluice::testing::TempDir;
    work_ = new sluice::testing::TempDir;
    loader::conversation_testing::WriteConversations(dir_->Join("chats"), false);
    sluice::testing::WriteFile(work_->Join("template.json"),
                               loader::conversation_testing::kTemplate);
    nginx_ = new Nginx;
    nginx_->Start(dir_->path(), work_->path(), &why_);
  }
  static void TearDownTestSuite() {
    delete nginx_;
    delete work_;
    delete dir_;
  }
  void SetUp() override {
    if (!why_.empty()) GTEST_SKIP() << why_;
  }

  // conversation_audio_test.cc's options: rows of whole conversations, fbank features of the
  // audio turns, several batches over several shards and blocks.
  static loader::LoaderOptions Options() {
    loader::LoaderOptions o;
    o.threads = 2;
    o.seed = 5;
    o.batching.shuffle_window = 8;
    o.packing.seq_len = loader::conversation_testing::kSeqLen;
    o.packing.batch_size = 2;
    o.packing.shuffle_window = 4;
    o.packing.chunk_tokens = 300;
    o.packing.pack_mode = loader::PackMode::kBestFit;
    o.packing.fit_window = 12;
    o.packing.split_long = false;
    o.packing.too_long = loader::TooLong::kSkip;
    o.conversation.chat_template = work_->Join("template.json");
    o.conversation.encoder_frames = "fastconformer";
    o.storage.timeout_ms = 2000;
    return o;
  }

  static ConversationEpoch Epoch(const std::string& location, const loader::LoaderOptions& o) {
    ConversationEpoch run;
    std::unique_ptr<loader::Loader> l;
    run.status = loader::Loader::Open(location, o, &l);
    if (!run.status.ok()) return run;
    run.status = l->Start(0);
    if (!run.status.ok()) return run;
    loader::BatchDigest digest;
    const loader::Batch* b;
    while ((run.status = l->Next(&b)).ok() && b != nullptr) {
      digest.Add(*b);
      ++run.batches;
      run.audio += b->num_audio();
    }
    run.digest = digest.hex();
    run.stats = l->stats();
    return run;
  }

  static sluice::testing::TempDir* dir_;
  static sluice::testing::TempDir* work_;
  static Nginx* nginx_;
  static std::string why_;
};
sluice::testing::TempDir* ConversationHttpTest::dir_ = nullptr;
sluice::testing::TempDir* ConversationHttpTest::work_ = nullptr;
Nginx* ConversationHttpTest::nginx_ = nullptr;
std::string ConversationHttpTest::why_;

TEST_F(ConversationHttpTest, BatchesWithTheirAudioOverHttpEqualThoseOnDisk) {
  const ConversationEpoch disk = Epoch(dir_->Join("chats"), Options());
  ASSERT_OK(disk.status);
  ASSERT_GT(disk.batches, 3u);
  ASSERT_GT(disk.audio, disk.batches) << "the batches carry audio turns";

  const ConversationEpoch http = Epoch(nginx_->url() + "/chats", Options());
  ASSERT_OK(http.status);
  EXPECT_EQ(http.batches, disk.batches);
  EXPECT_EQ(http.audio, disk.audio);
  EXPECT_EQ(http.digest, disk.digest);
  EXPECT_GT(http.stats.storage.requests, 0u) << "read over HTTP";
  EXPECT_EQ(disk.stats.storage.requests, 0u);
}

TEST_F(ConversationHttpTest, BatchesThroughTheBlockCacheEqualThoseOnDisk) {
  const ConversationEpoch disk = Epoch(dir_->Join("chats"), Options());
  ASSERT_OK(disk.status);
  sluice::testing::TempDir cache;
  loader::LoaderOptions o = Options();
  o.storage.cache_dir = cache.path();
  const ConversationEpoch fill = Epoch(nginx_->url() + "/chats", o);
  ASSERT_OK(fill.status);
  EXPECT_EQ(fill.digest, disk.digest);
  EXPECT_GT(fill.stats.storage.cache_misses, 0u) << "the first epoch fills the cache";
  EXPECT_GT(fill.stats.storage.cache_bytes_written, 0u);

  const ConversationEpoch cached = Epoch(nginx_->url() + "/chats", o);
  ASSERT_OK(cached.status);
  EXPECT_EQ(cached.digest, disk.digest);
  EXPECT_EQ(cached.audio, disk.audio);
  EXPECT_GT(cached.stats.storage.cache_hits, 0u);
  EXPECT_EQ(cached.stats.storage.cache_misses, 0u) << "everything came from the cache";
}

}  // namespace
}  // namespace sluice::storage
