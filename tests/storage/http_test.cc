// Datasets over HTTP from a real nginx on loopback, directly and through fault_proxy.py: the
// epoch digest equals the local one, faults are retried, damage is a Corruption, and an
// exhausted retry budget is an IOError naming URL, range and status (docs/remote.md).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include <filesystem>
#include <memory>
#include <string>

#include "assert_ok.h"
#include "loader/digest.h"
#include "loader/loader.h"
#include "servers.h"
#include "shards/dataset.h"
#include "storage/http_fetcher.h"
#include "storage/open.h"
#include "test_dataset.h"
#include "test_util.h"

namespace sluice::storage {
namespace {

using testing::FaultProxy;
using testing::Nginx;

struct EpochRun {
  Status status;
  std::string digest;
  loader::EpochStats stats;
};

loader::LoaderOptions Options() {
  loader::LoaderOptions o;
  o.threads = 2;
  o.batching.max_frames = 1500;
  o.batching.shuffle_window = 16;
  o.storage.timeout_ms = 2000;
  return o;
}

EpochRun Epoch(const std::string& location, const loader::LoaderOptions& o) {
  EpochRun run;
  std::unique_ptr<loader::Loader> l;
  run.status = loader::Loader::Open(location, o, &l);
  if (!run.status.ok()) return run;
  run.status = l->Start(0);
  if (!run.status.ok()) return run;
  loader::BatchDigest digest;
  const loader::Batch* b;
  while ((run.status = l->Next(&b)).ok() && b != nullptr) digest.Add(*b);
  run.digest = digest.hex();
  run.stats = l->stats();
  return run;
}

// One dataset and one nginx for the whole suite: starting them is most of the cost.
class HttpStorageTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new sluice::testing::TempDir;
    work_ = new sluice::testing::TempDir;
    loader::testing::AudioDatasetSpec spec;
    spec.records = 80;
    std::filesystem::create_directories(dir_->Join("clean"));
    std::filesystem::create_directories(dir_->Join("damaged"));
    loader::testing::WriteAudioDataset(dir_->Join("clean"), spec);
    loader::testing::WriteAudioDataset(dir_->Join("damaged"), spec);
    {
      std::unique_ptr<shards::Dataset> ds;
      ASSERT_OK(shards::Dataset::Open(dir_->Join("damaged"), {}, &ds));
      shard_ = ds->manifest().shards[1].file;
      block_lost_ = ds->shard(1).first_record(2) - ds->shard(1).first_record(1);
    }
    flip_offset_ = loader::testing::FlipByteInBlock(dir_->Join("damaged"), shard_, 1);
    // Clips for the waveform augmentation chain, served beside the data.
    for (const auto& [name, seed] : {std::pair<const char*, uint64_t>{"noise", 5}, {"rir", 6}}) {
      loader::testing::AudioDatasetSpec clips;
      clips.records = 3;
      clips.seed = seed;
      clips.max_samples = 4000;
      std::filesystem::create_directories(dir_->Join(name));
      loader::testing::WriteAudioDataset(dir_->Join(name), clips);
    }
    local_ = new EpochRun(Epoch(dir_->Join("clean"), Options()));
    nginx_ = new Nginx;
    if (!nginx_->Start(dir_->path(), work_->path(), &why_)) return;
  }
  static void TearDownTestSuite() {
    delete nginx_;
    delete local_;
    delete work_;
    delete dir_;
  }
  void SetUp() override {
    if (!why_.empty()) GTEST_SKIP() << why_;
    ASSERT_OK(local_->status);
  }
  // The fault proxy in front of nginx; the test skips if it cannot start.
  std::unique_ptr<FaultProxy> Proxy(const std::vector<std::string>& args) {
    auto p = std::make_unique<FaultProxy>();
    std::string why;
    if (!p->Start(nginx_->port(), args, work_->path(), &why)) {
      ADD_FAILURE() << why;
      return nullptr;
    }
    return p;
  }

  static sluice::testing::TempDir* dir_;
  static sluice::testing::TempDir* work_;
  static Nginx* nginx_;
  static EpochRun* local_;
  static std::string why_, shard_;
  static uint64_t flip_offset_;
  static size_t block_lost_;
};
sluice::testing::TempDir* HttpStorageTest::dir_ = nullptr;
sluice::testing::TempDir* HttpStorageTest::work_ = nullptr;
Nginx* HttpStorageTest::nginx_ = nullptr;
EpochRun* HttpStorageTest::local_ = nullptr;
std::string HttpStorageTest::why_, HttpStorageTest::shard_;
uint64_t HttpStorageTest::flip_offset_ = 0;
size_t HttpStorageTest::block_lost_ = 0;

TEST_F(HttpStorageTest, EpochDigestOverHttpEqualsLocal) {
  const EpochRun run = Epoch(nginx_->url() + "/clean", Options());
  ASSERT_OK(run.status);
  EXPECT_GT(run.stats.batches, 3u);
  EXPECT_EQ(run.stats.batches, local_->stats.batches);
  EXPECT_EQ(run.digest, local_->digest);
}

// The noise and impulse-response datasets are read like the data: over HTTP the augmented
// batches, and the clips' identities in the resolved options, equal those read from disk.
TEST_F(HttpStorageTest, AugmentationClipsOverHttpGiveTheSameBatchesAsOnDisk) {
  auto with_clips = [](const std::string& root) {
    loader::LoaderOptions o = Options();
    o.kind = loader::FeatureKind::kRaw;
    o.batching.max_frames = 40000;
    o.waveform_augment.noise.probability = 0.7;
    o.waveform_augment.reverb.probability = 0.7;
    o.noise_data = root + "/noise";
    o.rir_data = root + "/rir";
    return o;
  };
  const EpochRun disk = Epoch(dir_->Join("clean"), with_clips(dir_->path()));
  const EpochRun http = Epoch(dir_->Join("clean"), with_clips(nginx_->url()));
  ASSERT_OK(disk.status);
  ASSERT_OK(http.status);
  EXPECT_EQ(http.digest, disk.digest);
  loader::LoaderOptions plain = Options();
  plain.kind = loader::FeatureKind::kRaw;
  plain.batching.max_frames = 40000;
  EXPECT_NE(disk.digest, Epoch(dir_->Join("clean"), plain).digest) << "no clip was used";
  std::unique_ptr<loader::Loader> a, b;
  ASSERT_OK(loader::Loader::Open(dir_->Join("clean"), with_clips(dir_->path()), &a));
  ASSERT_OK(loader::Loader::Open(dir_->Join("clean"), with_clips(nginx_->url()), &b));
  EXPECT_EQ(a->options().noise_content, b->options().noise_content);
  EXPECT_EQ(a->options().rir_content, b->options().rir_content);
  EXPECT_FALSE(a->options().noise_content.empty());
}

TEST_F(HttpStorageTest, ReadsAreRangeRequestsCountedWithoutRetries) {
  std::shared_ptr<const shards::Storage> storage;
  ASSERT_OK(OpenStorage(nginx_->url() + "/clean/", StorageOptions{}, &storage));
  EXPECT_EQ(storage->location(), nginx_->url() + "/clean");
  shards::VerifyReport report;
  ASSERT_OK(shards::VerifyDataset(*storage, &report));
  EXPECT_TRUE(report.ok()) << report.problems[0].message;
  const shards::StorageCounters c = storage->Counters();
  EXPECT_GT(c.requests, report.shards);
  EXPECT_GE(c.bytes_fetched, report.bytes);
  EXPECT_EQ(c.retries, 0u);
}

TEST_F(HttpStorageTest, DroppedConnections503sAndTruncationsAreRetriedToTheSameDigest) {
  auto proxy = Proxy({"--seed", "7", "--drop-rate", "0.1", "--error-rate", "0.1", "--truncate-rate",
                      "0.1", "--garble-rate", "0.05"});
  ASSERT_NE(proxy, nullptr);
  loader::LoaderOptions o = Options();
  o.storage.retries = 12;
  const EpochRun run = Epoch(proxy->url() + "/clean", o);
  ASSERT_OK(run.status);
  EXPECT_EQ(run.digest, local_->digest);
  // The same faults under a reader whose counters we can see.
  std::shared_ptr<const shards::Storage> storage;
  ASSERT_OK(OpenStorage(proxy->url() + "/clean", o.storage, &storage));
  shards::VerifyReport report;
  ASSERT_OK(shards::VerifyDataset(*storage, &report));
  EXPECT_TRUE(report.ok()) << report.problems[0].message;
  EXPECT_GT(storage->Counters().retries, 0u);
  EXPECT_GT(storage->Counters().requests, storage->Counters().retries);
}

TEST_F(HttpStorageTest, FlippedByteOnTheWireIsCorruptionNamingShardAndBlock) {
  // The file on disk is clean; the proxy damages every answer that holds the byte.
  auto proxy = Proxy({"--flip-file", shard_, "--flip-offset", std::to_string(flip_offset_ + 40)});
  ASSERT_NE(proxy, nullptr);
  const EpochRun run = Epoch(proxy->url() + "/clean", Options());
  ASSERT_TRUE(run.status.IsCorruption()) << run.status.ToString();
  EXPECT_NE(run.status.message().find(shard_), std::string::npos) << run.status.ToString();
  EXPECT_NE(run.status.message().find("block 1"), std::string::npos) << run.status.ToString();

  loader::LoaderOptions skip = Options();
  skip.corrupt = loader::CorruptPolicy::kSkip;
  const EpochRun skipped = Epoch(proxy->url() + "/clean", skip);
  ASSERT_OK(skipped.status);
  EXPECT_EQ(skipped.stats.skipped_records, block_lost_);
  EXPECT_NE(skipped.digest, local_->digest);  // the loss is counted, never silent
}

// One response damaged while the cache fills must not be kept: a later job (same cache, healthy
// server) reads the right bytes, with --corrupt fail and skip alike.
TEST_F(HttpStorageTest, OneDamagedResponseWhileTheCacheFillsIsNeverCached) {
  auto proxy = Proxy({"--flip-file", shard_, "--flip-offset", std::to_string(flip_offset_ + 40),
                      "--flip-count", "1"});
  ASSERT_NE(proxy, nullptr);
  sluice::testing::TempDir cache;
  loader::LoaderOptions o = Options();
  o.storage.cache_dir = cache.path();
  o.corrupt = loader::CorruptPolicy::kSkip;
  const EpochRun fill = Epoch(proxy->url() + "/clean", o);
  ASSERT_OK(fill.status);
  EXPECT_EQ(fill.stats.storage.cache_corrupt, 1u) << "the damaged response was refused";
  EXPECT_EQ(fill.digest, local_->digest) << "and read once more";
  for (loader::CorruptPolicy policy :
       {loader::CorruptPolicy::kSkip, loader::CorruptPolicy::kFail}) {
    o.corrupt = policy;
    const EpochRun later = Epoch(proxy->url() + "/clean", o);
    ASSERT_OK(later.status);
    EXPECT_EQ(later.stats.skipped_records, 0u);
    EXPECT_EQ(later.digest, local_->digest);
    EXPECT_EQ(later.stats.storage.cache_corrupt, 0u);
    EXPECT_EQ(later.stats.storage.cache_misses, 0u) << "everything came from the cache";
  }
}

TEST_F(HttpStorageTest, DamagedFileOnTheServerIsCorruptionToo) {
  const EpochRun run = Epoch(nginx_->url() + "/damaged", Options());
  ASSERT_TRUE(run.status.IsCorruption()) << run.status.ToString();
  EXPECT_NE(run.status.message().find(shard_), std::string::npos) << run.status.ToString();
}

TEST_F(HttpStorageTest, ExhaustedRetriesNameUrlShardBlockRangeStatusAndAttempts) {
  // Every answer holding block 1 of one shard is a 503; the rest of the dataset is fine.
  auto proxy = Proxy({"--flip-file", shard_, "--flip-offset", std::to_string(flip_offset_ + 40),
                      "--error-on-flip"});
  ASSERT_NE(proxy, nullptr);
  loader::LoaderOptions o = Options();
  o.storage.retries = 2;
  o.corrupt = loader::CorruptPolicy::kSkip;  // skips damage, never a block it could not read
  const EpochRun run = Epoch(proxy->url() + "/clean", o);
  ASSERT_TRUE(run.status.IsIOError()) << run.status.ToString();
  const std::string& m = run.status.message();
  EXPECT_NE(m.find(proxy->url() + "/clean/" + shard_ + ": block 1 at offset"), std::string::npos)
      << m;
  EXPECT_NE(m.find("bytes=" + std::to_string(flip_offset_) + "-"), std::string::npos) << m;
  EXPECT_NE(m.find("HTTP 503"), std::string::npos) << m;
  EXPECT_NE(m.find("after 3 attempts"), std::string::npos) << m;
}

TEST_F(HttpStorageTest, ExhaustedRetriesAtOpenNameTheUrl) {
  auto proxy = Proxy({"--error-rate", "1", "--fault-paths", ".sluice"});
  ASSERT_NE(proxy, nullptr);
  StorageOptions so;
  so.retries = 1;
  std::unique_ptr<shards::Dataset> ds;
  const Status s = OpenDataset(proxy->url() + "/clean", so, {}, &ds);
  ASSERT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_NE(s.message().find(proxy->url() + "/clean/shard-"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("HTTP 503, after 2 attempts"), std::string::npos) << s.ToString();
}

TEST_F(HttpStorageTest, SilentServerIsATimeout) {
  auto proxy = Proxy({"--delay-ms", "3000", "--fault-paths", ".sluice"});
  ASSERT_NE(proxy, nullptr);
  loader::LoaderOptions o = Options();
  o.storage.retries = 1;
  o.storage.timeout_ms = 200;
  std::unique_ptr<loader::Loader> l;
  const Status s = loader::Loader::Open(proxy->url() + "/clean", o, &l);
  ASSERT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_NE(s.message().find("timeout: no byte for 200 ms"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("2 attempts"), std::string::npos) << s.ToString();
}

// A server that sends a byte every 100 ms never falls silent for --request-timeout; the
// minimum rate (--min-rate, default 1024 bytes/s over the timeout) ends it as a retried failure.
TEST_F(HttpStorageTest, TricklingServerIsTooSlowNamingUrlRateAndFlag) {
  auto proxy = Proxy({"--trickle-ms", "100", "--fault-paths", ".sluice"});
  ASSERT_NE(proxy, nullptr);
  loader::LoaderOptions o = Options();
  o.storage.retries = 1;
  o.storage.timeout_ms = 1000;
  const auto start = std::chrono::steady_clock::now();
  std::unique_ptr<loader::Loader> l;
  const Status s = loader::Loader::Open(proxy->url() + "/clean", o, &l);
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_NE(s.message().find(proxy->url() + "/clean/shard-"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("too slow: under 1024 bytes/s for 1 s"), std::string::npos)
      << s.ToString();
  EXPECT_NE(s.message().find("--min-rate"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("after 2 attempts"), std::string::npos) << s.ToString();
  EXPECT_LT(took, std::chrono::seconds(30));
}

// What curl calls "Received HTTP/0.9 when not allowed": an answer that is no HTTP response (cut
// short or garbled). Retried like a dropped connection, and named for what it is.
TEST_F(HttpStorageTest, GarbledResponseIsRetriedAndNamedMalformed) {
  auto proxy = Proxy({"--garble-rate", "1", "--fault-paths", ".sluice"});
  ASSERT_NE(proxy, nullptr);
  StorageOptions so;
  so.retries = 1;
  std::unique_ptr<shards::Dataset> ds;
  const Status s = OpenDataset(proxy->url() + "/clean", so, {}, &ds);
  ASSERT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_NE(s.message().find(proxy->url() + "/clean/shard-"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("malformed response"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("cut short"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("after 2 attempts"), std::string::npos) << s.ToString();
}

TEST_F(HttpStorageTest, MissingDatasetIsNotFoundNamingTheUrl) {
  std::unique_ptr<shards::Dataset> ds;
  const Status s = OpenDataset(nginx_->url() + "/nope", StorageOptions{}, {}, &ds);
  ASSERT_TRUE(s.IsNotFound()) << s.ToString();
  EXPECT_NE(s.message().find(nginx_->url() + "/nope/manifest.json"), std::string::npos)
      << s.ToString();
}

TEST_F(HttpStorageTest, HintsBeyondTheMemoryBoundAreDroppedAndReadOnDemand) {
  FetcherOptions fo;
  fo.max_held_bytes = 100000;  // room for about one block of the fixture
  std::unique_ptr<HttpFetcher> f;
  ASSERT_OK(HttpFetcher::Create(fo, &f));
  std::unique_ptr<shards::Dataset> ds;
  ASSERT_OK(shards::Dataset::Open(dir_->Join("clean"), {}, &ds));
  const shards::ShardReader& shard = ds->shard(0);
  const std::string url = nginx_->url() + "/clean/" + ds->manifest().shards[0].file;
  ASSERT_GE(shard.num_blocks(), 3u);
  for (size_t b = 0; b < shard.num_blocks(); ++b)
    f->Prefetch(url, shard.block(b).offset, shard.block(b).compressed_size);
  EXPECT_GT(f->hints_dropped(), 0u);
  for (size_t b = 0; b < shard.num_blocks(); ++b) {
    shards::Buffer want, got;
    ASSERT_OK(shard.ReadCompressedBlock(b, &want));
    got.Resize(shard.block(b).compressed_size);
    ASSERT_OK(f->ReadRange(url, shard.block(b).offset, got.size(), got.data()));
    EXPECT_EQ(std::string_view(got.data(), got.size()), std::string_view(want.data(), want.size()))
        << "block " << b;
  }
  // Every block once: the hinted ones, then the dropped ones on demand; nothing fetched twice.
  EXPECT_EQ(f->Counters().requests, shard.num_blocks());
}

// shardify info and verify take the URL and the storage flags; verify names wire damage.
TEST_F(HttpStorageTest, ShardifyInfoAndVerifyTakeAUrl) {
  const char* shardify = std::getenv("SHARDIFY");
  if (shardify == nullptr) GTEST_SKIP() << "$SHARDIFY is not set (meson test sets it)";
  auto run = [&](const std::string& args, std::string* out) {
    FILE* p = popen((std::string(shardify) + " " + args + " 2>&1").c_str(), "r");
    char buf[4096];
    while (p != nullptr && std::fgets(buf, sizeof(buf), p) != nullptr) *out += buf;
    const int rc = p ? pclose(p) : -1;
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  };
  std::string out;
  EXPECT_EQ(run("info " + nginx_->url() + "/clean --requests 4", &out), 0) << out;
  EXPECT_NE(out.find("records    80 written"), std::string::npos) << out;
  out.clear();
  EXPECT_EQ(run("verify -q " + nginx_->url() + "/clean --retries 1", &out), 0) << out;
  EXPECT_NE(out.find("verify: OK"), std::string::npos) << out;
  auto proxy = Proxy({"--flip-file", shard_, "--flip-offset", std::to_string(flip_offset_ + 40)});
  ASSERT_NE(proxy, nullptr);
  out.clear();
  EXPECT_EQ(run("verify -q " + proxy->url() + "/clean", &out), 1) << out;
  EXPECT_NE(out.find("DAMAGED " + shard_), std::string::npos) << out;
}

// A text dataset stored as text (shardify text --tokenizer bpe:N --store text): the loader
// tokenizes online with the dataset's SentencePiece model, which it reads from the URL as it reads
// the shards. Same batches (tokens) as from the directory; a damaged model is a Corruption naming
// its URL.
TEST_F(HttpStorageTest, SentencePieceTextDatasetLoadsFromAUrl) {
  const char* shardify = std::getenv("SHARDIFY");
  if (shardify == nullptr) GTEST_SKIP() << "$SHARDIFY is not set (meson test sets it)";
  const char* words[] = {"the",   "quick",  "brown",  "fox",   "jumps",  "over",
                         "lazy",  "dog",    "speech", "data",  "loader", "block",
                         "cache", "remote", "epoch",  "token", "piece",  "model"};
  std::string text;
  uint64_t x = 1;
  for (int line = 0; line < 300; ++line) {
    for (int w = 0; w < 8; ++w) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      text += std::string(w ? " " : "") + words[(x >> 33) % std::size(words)];
    }
    text += "\n";
  }
  sluice::testing::WriteFile(work_->Join("lines.txt"), text);
  for (const char* name : {"spm", "spm-damaged"}) {
    const sluice::testing::ShellResult r =
        sluice::testing::RunShell(std::string(shardify) + " text -i " + work_->Join("lines.txt") +
                                  " -o " + dir_->Join(name) + " --tokenizer bpe:64 --store text");
    ASSERT_EQ(r.code, 0) << r.out;
  }
  std::string model = sluice::testing::ReadFile(dir_->Join("spm-damaged/tokenizer.model"));
  ASSERT_GT(model.size(), 100u);
  model[model.size() / 2] ^= 0x20;
  sluice::testing::WriteFile(dir_->Join("spm-damaged/tokenizer.model"), model);

  loader::LoaderOptions o;
  o.threads = 2;
  o.batching.max_frames = 400;  // tokens per batch: several batches
  const EpochRun local = Epoch(dir_->Join("spm"), o);
  ASSERT_OK(local.status);
  EXPECT_GT(local.stats.batches, 3u);
  EXPECT_GT(local.stats.tokens, 0u);
  const EpochRun remote = Epoch(nginx_->url() + "/spm", o);
  ASSERT_OK(remote.status);
  EXPECT_EQ(remote.stats.batches, local.stats.batches);
  EXPECT_EQ(remote.stats.tokens, local.stats.tokens);
  EXPECT_EQ(remote.digest, local.digest);

  const EpochRun damaged = Epoch(nginx_->url() + "/spm-damaged", o);
  EXPECT_TRUE(damaged.status.IsCorruption()) << damaged.status.ToString();
  EXPECT_NE(damaged.status.message().find(nginx_->url() + "/spm-damaged/tokenizer.model"),
            std::string::npos)
      << damaged.status.ToString();
}

}  // namespace
}  // namespace sluice::storage
