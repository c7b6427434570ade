// The block cache (storage/block_cache.h) over a fake remote (fake_remote.h) that counts what
// reaches it: hits, misses, the budget, damaged and stray files, concurrency, dataset rewrites.
#include "storage/block_cache.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <utime.h>

#include <filesystem>
#include <thread>
#include <vector>

#include "assert_ok.h"
#include "fake_remote.h"
#include "shards/checksum.h"
#include "shards/dataset.h"
#include "shards/dataset_writer.h"
#include "shards/manifest.h"
#include "shards/record.h"
#include "storage/cache_entry.h"
#include "storage/open.h"
#include "test_util.h"

namespace sluice::storage {
namespace {

namespace fs = std::filesystem;
using sluice::testing::TempDir;
using testing::FakeRemote;

constexpr size_t kFileSize = 64 * 1024;
constexpr size_t kRange = 4096;  // the tests read [k * kRange, (k + 1) * kRange)

// A "dataset" of two files of seeded bytes (the cache needs manifest.json's names, sizes and
// checksums, not shard contents).
void WriteDataset(const std::string& dir, uint64_t seed) {
  shards::Manifest m;
  m.kind = "text";
  m.fields = {"text"};
  for (int i = 0; i < 2; ++i) {
    shards::ShardEntry e;
    e.file = "shard-0000" + std::to_string(i) + ".sluice";
    const std::string bytes = sluice::testing::RandomBytes(seed * 10 + i, kFileSize);
    sluice::testing::WriteFile(dir + "/" + e.file, bytes);
    e.bytes = bytes.size();
    e.xxh3 = shards::Checksum(bytes.data(), bytes.size());
    e.records = 1;
    m.records += 1;
    m.shards.push_back(e);
  }
  ASSERT_OK(shards::SaveManifest(dir, m));
}

struct Cached {
  std::shared_ptr<FakeRemote> remote;
  std::shared_ptr<const shards::Storage> storage;
};

Cached Open(const std::string& data, const std::string& cache, uint64_t budget = 0) {
  Cached c;
  c.remote = FakeRemote::Over(shards::NewLocalStorage(data));
  StorageOptions o;
  o.cache_dir = cache;
  o.cache_bytes = budget;
  EXPECT_OK(WithBlockCache(c.remote, o, &c.storage));
  std::string manifest;
  EXPECT_OK(c.storage->ReadFile(shards::kManifestName, &manifest));
  return c;
}

std::unique_ptr<RandomAccessFile> OpenShard(const Cached& c, int i) {
  std::unique_ptr<RandomAccessFile> f;
  EXPECT_OK(c.storage->OpenFile("shard-0000" + std::to_string(i) + ".sluice", kFileSize, &f));
  return f;
}

std::string Expected(const std::string& data, int shard, size_t range) {
  return sluice::testing::ReadFile(data + "/shard-0000" + std::to_string(shard) + ".sluice")
      .substr(range * kRange, kRange);
}

uint64_t Xxh3(const std::string& bytes) { return shards::Checksum(bytes.data(), bytes.size()); }

// A read as a shard reader makes it: with the checksum the bytes must have (the file's name is
// its local path under the fake remote, so the test knows them).
std::string ReadRange(const RandomAccessFile& f, size_t range) {
  const uint64_t xxh3 = Xxh3(sluice::testing::ReadFile(f.name()).substr(range * kRange, kRange));
  std::string out(kRange, '\0');
  EXPECT_OK(f.ReadVerified(range * kRange, kRange, xxh3, out.data()));
  return out;
}

// Every cache entry file under dir, temporary files excluded.
std::vector<fs::path> Entries(const std::string& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    uint64_t offset, n;
    if (e.is_regular_file() && ParseCacheEntryName(e.path().filename(), &offset, &n))
      out.push_back(e.path());
  }
  return out;
}

TEST(BlockCache, SecondPassIsAllHitsWithNoRemoteReads) {
  TempDir data, cache;
  WriteDataset(data.path(), 1);
  Cached c = Open(data.path(), cache.path());
  auto f = OpenShard(c, 0);
  const size_t ranges = kFileSize / kRange;
  for (size_t r = 0; r < ranges; ++r) EXPECT_EQ(ReadRange(*f, r), Expected(data.path(), 0, r));
  EXPECT_EQ(c.remote->reads, ranges);
  for (size_t r = 0; r < ranges; ++r) EXPECT_EQ(ReadRange(*f, r), Expected(data.path(), 0, r));
  EXPECT_EQ(c.remote->reads, ranges) << "the second pass reached the remote";
  const shards::StorageCounters k = c.storage->Counters();
  EXPECT_EQ(k.cache_misses, ranges);
  EXPECT_EQ(k.cache_hits, ranges);
  EXPECT_EQ(k.cache_bytes_written, kFileSize);
  EXPECT_EQ(k.cache_bytes_read, kFileSize);
  EXPECT_EQ(k.bytes_fetched, kFileSize) << "Counters() sums the remote's and the cache's";
  EXPECT_EQ(k.cache_corrupt, 0u);

  // Another instance (the next run) finds the entries on disk.
  Cached again = Open(data.path(), cache.path());
  auto g = OpenShard(again, 0);
  for (size_t r = 0; r < ranges; ++r) EXPECT_EQ(ReadRange(*g, r), Expected(data.path(), 0, r));
  EXPECT_EQ(again.remote->reads, 0u);
}

TEST(BlockCache, FillsToTheBudgetThenKeepsWhatItHolds) {
  TempDir data, cache;
  WriteDataset(data.path(), 1);
  const uint64_t entry = kRange + kCacheEntryOverhead;
  const uint64_t budget = 3 * entry + entry / 2;  // room for 3 entries
  Cached c = Open(data.path(), cache.path(), budget);
  auto f = OpenShard(c, 0);
  const size_t ranges = kFileSize / kRange;
  for (int epoch = 0; epoch < 3; ++epoch) {
    const uint64_t before = c.remote->reads;
    for (size_t r = 0; r < ranges; ++r) EXPECT_EQ(ReadRange(*f, r), Expected(data.path(), 0, r));
    // Not an LRU cycling through a dataset bigger than it: the first three stay hits.
    EXPECT_EQ(c.remote->reads - before, epoch == 0 ? ranges : ranges - 3) << "epoch " << epoch;
  }
  EXPECT_EQ(c.storage->Counters().cache_hits, 6u);  // and the entries are written
  uint64_t on_disk = 0;
  for (const fs::path& p : Entries(cache.path())) on_disk += fs::file_size(p);
  EXPECT_EQ(on_disk, 3 * entry);
  EXPECT_LE(on_disk, budget);
}

TEST(BlockCache, DamagedEntryIsDeletedCountedAndFetchedAgain) {
  TempDir data, cache;
  WriteDataset(data.path(), 1);
  Cached c = Open(data.path(), cache.path());
  auto f = OpenShard(c, 1);
  ReadRange(*f, 2);
  ReadRange(*f, 3);
  c.storage->Counters();  // waits for the entries to be written (storage/cache_writer.h)
  std::vector<fs::path> entries = Entries(cache.path());
  ASSERT_EQ(entries.size(), 2u);
  // One entry with a flipped payload byte, the other cut short.
  for (const fs::path& p : entries) {
    std::string bytes = sluice::testing::ReadFile(p);
    if (p.filename() == CacheEntryName(2 * kRange, kRange))
      bytes[kCacheEntryHeaderSize + 100] ^= 0x20;
    else bytes.resize(bytes.size() - 5);
    sluice::testing::WriteFile(p, bytes);
  }
  const uint64_t before = c.remote->reads;
  EXPECT_EQ(ReadRange(*f, 2), Expected(data.path(), 1, 2));
  EXPECT_EQ(ReadRange(*f, 3), Expected(data.path(), 1, 3));
  EXPECT_EQ(c.remote->reads - before, 2u) << "both damaged entries were read again remotely";
  EXPECT_EQ(c.storage->Counters().cache_corrupt, 2u);
  // Rewritten good: hits again.
  EXPECT_EQ(ReadRange(*f, 2), Expected(data.path(), 1, 2));
  EXPECT_EQ(ReadRange(*f, 3), Expected(data.path(), 1, 3));
  EXPECT_EQ(c.remote->reads - before, 2u);
}

TEST(BlockCache, EntryOfAnotherRangeUnderThisNameIsRejected) {
  TempDir data, cache;
  WriteDataset(data.path(), 1);
  Cached c = Open(data.path(), cache.path());
  auto f = OpenShard(c, 0);
  ReadRange(*f, 0);
  ReadRange(*f, 1);
  c.storage->Counters();  // the entries are on disk
  // Range 1's (valid, checksummed) entry copied over range 0's name: its header names offset 4096.
  const std::string dir = Entries(cache.path())[0].parent_path();
  fs::copy_file(dir + "/" + CacheEntryName(kRange, kRange), dir + "/" + CacheEntryName(0, kRange),
                fs::copy_options::overwrite_existing);
  EXPECT_EQ(ReadRange(*f, 0), Expected(data.path(), 0, 0));
  EXPECT_EQ(c.storage->Counters().cache_corrupt, 1u);
}

// A FIFO under an entry's name blocked open() for ever; now it is a bad entry: removed, counted
// and the block fetched again.
TEST(BlockCache, FifoUnderAnEntrysNameIsABadEntryNotAHang) {
  TempDir data, cache;
  WriteDataset(data.path(), 1);
  Cached c = Open(data.path(), cache.path());
  auto f = OpenShard(c, 0);
  ReadRange(*f, 0);
  c.storage->Counters();  // the entry is on disk
  const fs::path entry = Entries(cache.path())[0];
  fs::remove(entry);
  sluice::testing::FifoWatchdog watchdog(entry.string(), 10);
  char buf[kRange];
  std::string why;
  EXPECT_EQ(ReadCacheEntry(entry.string(), 0, kRange, 0, buf, &why), EntryRead::kBad);
  EXPECT_EQ(why.rfind(entry.string() + ": not a regular file (FIFO)", 0), 0u) << why;
  const uint64_t before = c.remote->reads;
  EXPECT_EQ(ReadRange(*f, 0), Expected(data.path(), 0, 0));
  EXPECT_FALSE(watchdog.fired()) << "the cache blocked in open() on a FIFO";
  EXPECT_EQ(c.remote->reads - before, 1u);
  EXPECT_EQ(c.storage->Counters().cache_corrupt, 1u);
}

TEST(BlockCache, LeftoverTemporaryFilesAreIgnoredAndOldOnesSwept) {
  TempDir data, cache;
  WriteDataset(data.path(), 1);
  std::string dir;
  {
    Cached c = Open(data.path(), cache.path());
    ReadRange(*OpenShard(c, 0), 0);
    c.storage->Counters();  // the entry is on disk
    dir = Entries(cache.path())[0].parent_path();
  }
  // What a writer killed mid-write leaves: a partial temporary file for range 1, one old, one
  // fresh (another process may be writing it right now).
  const std::string partial = dir + "/" + CacheEntryName(kRange, kRange) + ".tmp.99999.0";
  const std::string fresh = dir + "/" + CacheEntryName(2 * kRange, kRange) + ".tmp.99999.1";
  sluice::testing::WriteFile(partial, "SLUICEC1 partial");
  sluice::testing::WriteFile(fresh, "SLUICEC1 partial");
  struct utimbuf old = {1000000000, 1000000000};
  ASSERT_EQ(::utime(partial.c_str(), &old), 0);

  Cached c = Open(data.path(), cache.path());
  EXPECT_FALSE(fs::exists(partial)) << "a temporary file older than the stale age is deleted";
  EXPECT_TRUE(fs::exists(fresh)) << "a fresh one may be another process's write in progress";
  auto f = OpenShard(c, 0);
  EXPECT_EQ(ReadRange(*f, 1), Expected(data.path(), 0, 1));
  EXPECT_EQ(ReadRange(*f, 2), Expected(data.path(), 0, 2));
  EXPECT_EQ(c.remote->reads, 2u) << "temporary files are never read as entries";
  EXPECT_EQ(c.storage->Counters().cache_corrupt, 0u);
}

TEST(BlockCache, ManyThreadsAndTwoInstancesOnOneDirectoryReadTheRightBytes) {
  TempDir data, cache;
  WriteDataset(data.path(), 1);
  Cached a = Open(data.path(), cache.path());
  Cached b = Open(data.path(), cache.path());
  a.remote->latency_us = 200;  // misses overlap
  b.remote->latency_us = 200;
  std::vector<std::unique_ptr<RandomAccessFile>> files;
  for (const Cached* c : {&a, &b})
    for (int s = 0; s < 2; ++s) files.push_back(OpenShard(*c, s));
  const size_t ranges = kFileSize / kRange;
  std::vector<std::string> expected[2];
  for (int s = 0; s < 2; ++s)
    for (size_t r = 0; r < ranges; ++r) expected[s].push_back(Expected(data.path(), s, r));
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      std::string buf(kRange, '\0');
      for (int i = 0; i < 200; ++i) {
        const size_t file = (t + i) % files.size();
        const size_t r = (t + i / files.size()) % ranges;  // every range of every file
        const std::string& want = expected[file % 2][r];
        if (!files[file]->ReadVerified(r * kRange, kRange, Xxh3(want), buf.data()).ok() ||
            buf != want)
          wrong++;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong, 0);
  // Every range of both shards is now cached, whichever instance wrote it (Counters(): once
  // each instance's entries are on disk, the other sees them).
  a.storage->Counters();
  b.storage->Counters();
  const uint64_t before = a.remote->reads + b.remote->reads;
  for (auto& f : files)
    for (size_t r = 0; r < ranges; ++r) ReadRange(*f, r);
  EXPECT_EQ(a.remote->reads + b.remote->reads, before);
  EXPECT_EQ(Entries(cache.path()).size(), 2 * ranges);
}

TEST(BlockCache, RewrittenDatasetAtTheSameLocationNeverServesOldBytes) {
  TempDir data, cache;
  WriteDataset(data.path(), 1);
  {
    Cached c = Open(data.path(), cache.path());
    auto f = OpenShard(c, 0);
    for (size_t r = 0; r < 4; ++r) ReadRange(*f, r);
  }
  WriteDataset(data.path(), 2);  // same names and sizes, other bytes, a new manifest.json
  Cached c = Open(data.path(), cache.path());
  auto f = OpenShard(c, 0);
  for (size_t r = 0; r < 4; ++r) EXPECT_EQ(ReadRange(*f, r), Expected(data.path(), 0, r));
  EXPECT_EQ(c.remote->reads, 4u);
  EXPECT_EQ(c.storage->Counters().cache_hits, 0u);
  EXPECT_EQ(Entries(cache.path()).size(), 4u) << "the old version's entries were deleted";
}

TEST(BlockCache, GarbledManifestCachesNothingAndDeletesNothing) {
  TempDir data, cache;
  WriteDataset(data.path(), 1);
  {
    Cached c = Open(data.path(), cache.path());
    ReadRange(*OpenShard(c, 0), 0);
  }
  const std::string good = sluice::testing::ReadFile(data.Join("manifest.json"));
  sluice::testing::WriteFile(data.Join("manifest.json"), "<html>503</html>");
  {
    Cached c = Open(data.path(), cache.path());
    auto f = OpenShard(c, 0);
    EXPECT_EQ(ReadRange(*f, 1), Expected(data.path(), 0, 1));
    EXPECT_EQ(c.storage->Counters().cache_misses, 0u) << "no manifest, no cache: read through";
  }
  EXPECT_EQ(Entries(cache.path()).size(), 1u) << "a garbled manifest must not wipe the cache";
  sluice::testing::WriteFile(data.Join("manifest.json"), good);
  Cached c = Open(data.path(), cache.path());
  EXPECT_EQ(ReadRange(*OpenShard(c, 0), 0), Expected(data.path(), 0, 0));
  EXPECT_EQ(c.remote->reads, 0u);
}

TEST(BlockCache, WillNeedReachesTheRemoteOnlyForRangesNotHeld) {
  TempDir data, cache;
  WriteDataset(data.path(), 1);
  Cached c = Open(data.path(), cache.path());
  auto f = OpenShard(c, 0);
  ReadRange(*f, 0);
  f->WillNeed(0, kRange);
  EXPECT_EQ(c.remote->will_needs, 0u);
  f->WillNeed(kRange, kRange);
  EXPECT_EQ(c.remote->will_needs, 1u);
}

TEST(BlockCache, RemoteFailureIsReturnedAndNothingIsCached) {
  TempDir data, cache;
  WriteDataset(data.path(), 1);
  Cached c = Open(data.path(), cache.path());
  auto f = OpenShard(c, 0);
  c.remote->fail_reads = 1;
  std::string buf(kRange, '\0');
  const Status s = f->ReadVerified(0, kRange, Xxh3(Expected(data.path(), 0, 0)), buf.data());
  EXPECT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_TRUE(Entries(cache.path()).empty());
  EXPECT_EQ(ReadRange(*f, 0), Expected(data.path(), 0, 0));
}

TEST(BlockCache, FilesTheManifestDoesNotListPassThrough) {
  TempDir data, cache;
  WriteDataset(data.path(), 1);
  sluice::testing::WriteFile(data.Join("other.bin"), std::string(kRange, 'x'));
  Cached c = Open(data.path(), cache.path());
  std::unique_ptr<RandomAccessFile> f;
  ASSERT_OK(c.storage->OpenFile("other.bin", kRange, &f));
  EXPECT_EQ(ReadRange(*f, 0), std::string(kRange, 'x'));
  EXPECT_EQ(ReadRange(*f, 0), std::string(kRange, 'x'));
  EXPECT_EQ(c.remote->reads, 2u);
  EXPECT_TRUE(Entries(cache.path()).empty());
}

// What VerifyDataset reads in 1 MiB chunks, or a footer whose manifest records no checksum: bytes
// nobody vouches for could be another version's, so they are never kept.
TEST(BlockCache, ReadsWithoutAChecksumPassThroughUncached) {
  TempDir data, cache;
  WriteDataset(data.path(), 1);
  Cached c = Open(data.path(), cache.path());
  auto f = OpenShard(c, 0);
  std::string buf(kRange, '\0');
  for (int i = 0; i < 2; ++i) {
    ASSERT_OK(f->Read(0, kRange, buf.data()));
    EXPECT_EQ(buf, Expected(data.path(), 0, 0));
  }
  EXPECT_EQ(c.remote->reads, 2u);
  EXPECT_EQ(c.storage->Counters().cache_misses, 0u);
  EXPECT_TRUE(Entries(cache.path()).empty());
}

// One response damaged on its way must cost one more request, not every later run: it is
// refused, counted and fetched again; what is cached is the good copy.
TEST(BlockCache, DamagedResponseIsNeverCachedAndIsFetchedOnceMore) {
  TempDir data, cache;
  WriteDataset(data.path(), 1);
  Cached c = Open(data.path(), cache.path());
  auto f = OpenShard(c, 0);
  c.remote->damage_reads = 1;
  EXPECT_EQ(ReadRange(*f, 3), Expected(data.path(), 0, 3));
  EXPECT_EQ(c.remote->reads, 2u);
  EXPECT_EQ(c.storage->Counters().cache_corrupt, 1u);
  Cached again = Open(data.path(), cache.path());  // the next run
  EXPECT_EQ(ReadRange(*OpenShard(again, 0), 3), Expected(data.path(), 0, 3));
  EXPECT_EQ(again.remote->reads, 0u) << "the good copy was cached";
  EXPECT_EQ(again.storage->Counters().cache_corrupt, 0u);
}

// A server that keeps sending wrong bytes: the reader gets them (and reports them, as without a
// cache); the cache keeps none.
TEST(BlockCache, BytesThatNeverMatchGoToTheReaderUncached) {
  TempDir data, cache;
  WriteDataset(data.path(), 1);
  Cached c = Open(data.path(), cache.path());
  auto f = OpenShard(c, 0);
  std::string buf(kRange, '\0');
  ASSERT_OK(f->ReadVerified(0, kRange, Xxh3("another version"), buf.data()));
  EXPECT_EQ(buf, Expected(data.path(), 0, 0));
  EXPECT_EQ(c.remote->reads, 2u);
  EXPECT_EQ(c.storage->Counters().cache_corrupt, 1u);
  EXPECT_TRUE(Entries(cache.path()).empty());
}

// An entry whose own framing is intact but whose bytes are not the ones the shard's index names
// (what an older sluice cached from a damaged response) is dropped, counted and fetched again.
TEST(BlockCache, EntryWithOtherBytesThanTheIndexNamesIsDroppedAndFetchedAgain) {
  TempDir data, cache;
  WriteDataset(data.path(), 1);
  Cached c = Open(data.path(), cache.path());
  auto f = OpenShard(c, 0);
  ReadRange(*f, 1);
  c.storage->Counters();  // the entry is on disk
  const fs::path entry = Entries(cache.path()).at(0);
  std::string wrong = Expected(data.path(), 0, 1);
  wrong[10] ^= 0x10;
  ASSERT_OK(WriteCacheEntry(entry, kRange, kRange, wrong.data()));
  EXPECT_EQ(ReadRange(*f, 1), Expected(data.path(), 0, 1));
  EXPECT_EQ(c.remote->reads, 2u);
  EXPECT_EQ(c.storage->Counters().cache_corrupt, 1u);
  EXPECT_EQ(ReadRange(*f, 1), Expected(data.path(), 0, 1));
  EXPECT_EQ(c.remote->reads, 2u) << "rewritten good: a hit";
}

// Two versions of a text dataset that differ in one transcript of the same length, with shards of
// the same sizes and record counts: only the checksums in manifest.json tell them apart.
void WriteTranscripts(const std::string& dir, int changed_record, char changed_to) {
  shards::DatasetWriterOptions opt;
  opt.shard_size = 1200;
  opt.shard.block_size = 400;
  shards::DatasetWriter w(dir, opt);
  for (int i = 0; i < 60; ++i) {
    std::string text = "transcript " + sluice::testing::RandomBytes(i, 40);
    for (char& ch : text) ch = 'a' + static_cast<unsigned char>(ch) % 26;
    if (i == changed_record) text[20] = changed_to;
    shards::RecordBuilder rb;
    rb.AddField(shards::FieldType::kText, text);
    EXPECT_OK(w.Add({"utt" + std::to_string(i), 0, 0}, rb.data()));
  }
  EXPECT_OK(w.Finish());
  shards::Manifest m;
  m.kind = "text";
  m.fields = {"text"};
  m.records = 60;
  m.shards = w.shards();
  EXPECT_OK(shards::SaveManifest(dir, m));
}

std::vector<std::string> AllRecords(const shards::Dataset& ds) {
  std::vector<std::string> out;
  for (size_t s = 0; s < ds.num_shards(); ++s) {
    for (size_t i = 0; i < ds.shard(s).num_records(); ++i) {
      std::string payload;
      EXPECT_OK(ds.shard(s).ReadRecord(i, &payload));
      out.push_back(payload);
    }
  }
  return out;
}

// A reader that starts while the dataset is re-uploaded (aws s3 sync writes manifest.json before
// the shards) sees the new manifest and an old shard. That must be an error saying so, and no byte
// of the old shard may be cached under the new version's key, where every later job would read it.
TEST(BlockCache, ShardOfAnotherVersionIsAMidUpdateErrorAndNothingOfItIsCached) {
  TempDir v1, v2, live, cache;
  WriteTranscripts(v1.path(), -1, 0);
  shards::Manifest m1, m2;
  ASSERT_OK(shards::LoadManifest(v1.path(), &m1));
  ASSERT_GE(m1.shards.size(), 3u);
  std::string shard;  // the one shard the versions differ in
  for (char to = 'a'; to <= 'z' && shard.empty(); ++to) {
    fs::remove_all(v2.path());
    fs::create_directories(v2.path());
    WriteTranscripts(v2.path(), 30, to);
    ASSERT_OK(shards::LoadManifest(v2.path(), &m2));
    bool same_sizes = m2.shards.size() == m1.shards.size();
    int differ = 0;
    for (size_t i = 0; same_sizes && i < m1.shards.size(); ++i) {
      same_sizes =
          m1.shards[i].bytes == m2.shards[i].bytes && m1.shards[i].records == m2.shards[i].records;
      differ += m1.shards[i].xxh3 != m2.shards[i].xxh3;
    }
    for (size_t i = 0; same_sizes && differ == 1 && i < m1.shards.size(); ++i)
      if (m1.shards[i].xxh3 != m2.shards[i].xxh3) shard = m1.shards[i].file;
  }
  ASSERT_FALSE(shard.empty()) << "no one-letter change kept every shard's size";
  // Mid-update: v2's manifest, v1's shards.
  for (const shards::ShardEntry& e : m1.shards) fs::copy_file(v1.Join(e.file), live.Join(e.file));
  fs::copy_file(v2.Join("manifest.json"), live.Join("manifest.json"));

  StorageOptions o;
  o.cache_dir = cache.path();
  auto open = [&](std::unique_ptr<shards::Dataset>* ds) {
    std::shared_ptr<const shards::Storage> storage;
    EXPECT_OK(WithBlockCache(FakeRemote::Over(shards::NewLocalStorage(live.path())), o, &storage));
    return shards::Dataset::Open(storage, {}, ds);
  };
  {
    std::unique_ptr<shards::Dataset> ds;
    const Status s = open(&ds);
    if (s.ok()) AllRecords(*ds);  // what a job would do with it
    EXPECT_TRUE(s.IsCorruption()) << s.ToString();
    EXPECT_NE(s.message().find(shard), std::string::npos) << s.ToString();
    EXPECT_NE(s.message().find("different versions of the dataset"), std::string::npos)
        << s.ToString();
    EXPECT_NE(s.message().find("HINT: wait for the upload to finish"), std::string::npos)
        << s.ToString();
  }
  // The upload finishes: the next job reads the new version, whatever the first one saw.
  for (const shards::ShardEntry& e : m2.shards)
    fs::copy_file(v2.Join(e.file), live.Join(e.file), fs::copy_options::overwrite_existing);
  std::unique_ptr<shards::Dataset> ds, want;
  ASSERT_OK(open(&ds));
  ASSERT_OK(shards::Dataset::Open(v2.path(), {}, &want));
  EXPECT_EQ(AllRecords(*ds), AllRecords(*want));
}

TEST(BlockCache, UnusableCacheDirectoryIsAnErrorNamingIt) {
  TempDir data, cache;
  WriteDataset(data.path(), 1);
  sluice::testing::WriteFile(cache.Join("file"), "not a directory");
  StorageOptions o;
  o.cache_dir = cache.Join("file");
  std::shared_ptr<const shards::Storage> s;
  const Status st = WithBlockCache(shards::NewLocalStorage(data.path()), o, &s);
  EXPECT_TRUE(st.IsIOError()) << st.ToString();
  EXPECT_NE(st.ToString().find(cache.Join("file")), std::string::npos) << st.ToString();
}

TEST(BlockCache, OpenStorageNeverCachesALocalDirectory) {
  TempDir data, cache;
  WriteDataset(data.path(), 1);
  StorageOptions o;
  o.cache_dir = cache.path();
  std::shared_ptr<const shards::Storage> s;
  ASSERT_OK(OpenStorage(data.path(), o, &s));
  std::unique_ptr<RandomAccessFile> f;
  ASSERT_OK(s->OpenFile("shard-00000.sluice", kFileSize, &f));
  ReadRange(*f, 0);
  EXPECT_TRUE(fs::is_empty(cache.path()));
  EXPECT_EQ(s->Counters().cache_misses, 0u);
}

}  // namespace
}  // namespace sluice::storage
