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
#include "shards/manifest.h"
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

std::unique_ptr<shards::RandomAccessFile> OpenShard(const Cached& c, int i) {
  std::unique_ptr<shards::RandomAccessFile> f;
  EXPECT_OK(c.storage->OpenFile("shard-0000" + std::to_string(i) + ".sluice", kFileSize, &f));
  return f;
}

std::string Expected(const std::string& data, int shard, size_t range) {
  return sluice::testing::ReadFile(data + "/shard-0000" + std::to_string(shard) + ".sluice")
      .substr(range * kRange, kRange);
}

std::string ReadRange(const shards::RandomAccessFile& f, size_t range) {
  std::string out(kRange, '\0');
  EXPECT_OK(f.Read(range * kRange, kRange, out.data()));
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
  EXPECT_EQ(ReadCacheEntry(entry.string(), 0, kRange, buf, &why), EntryRead::kBad);
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
  std::vector<std::unique_ptr<shards::RandomAccessFile>> files;
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
        if (!files[file]->Read(r * kRange, kRange, buf.data()).ok() || buf != expected[file % 2][r])
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
  const Status s = f->Read(0, kRange, buf.data());
  EXPECT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_TRUE(Entries(cache.path()).empty());
  EXPECT_EQ(ReadRange(*f, 0), Expected(data.path(), 0, 0));
}

TEST(BlockCache, FilesTheManifestDoesNotListPassThrough) {
  TempDir data, cache;
  WriteDataset(data.path(), 1);
  sluice::testing::WriteFile(data.Join("other.bin"), std::string(kRange, 'x'));
  Cached c = Open(data.path(), cache.path());
  std::unique_ptr<shards::RandomAccessFile> f;
  ASSERT_OK(c.storage->OpenFile("other.bin", kRange, &f));
  EXPECT_EQ(ReadRange(*f, 0), std::string(kRange, 'x'));
  EXPECT_EQ(ReadRange(*f, 0), std::string(kRange, 'x'));
  EXPECT_EQ(c.remote->reads, 2u);
  EXPECT_TRUE(Entries(cache.path()).empty());
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
  std::unique_ptr<shards::RandomAccessFile> f;
  ASSERT_OK(s->OpenFile("shard-00000.sluice", kFileSize, &f));
  ReadRange(*f, 0);
  EXPECT_TRUE(fs::is_empty(cache.path()));
  EXPECT_EQ(s->Counters().cache_misses, 0u);
}

}  // namespace
}  // namespace sluice::storage
