// The descriptor cache local shard files read through (shards/fd_cache.h): it holds no more than
// its capacity, never closes a descriptor a read still uses, gives descriptors back when open()
// runs out, and refuses a file that changed under it.
#include "shards/fd_cache.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <set>
#include <filesystem>
#include <thread>
#include <vector>

#include "assert_ok.h"
#include "test_util.h"

namespace sluice::shards {
namespace {

// Descriptors this process holds now.
size_t OpenFds() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n - 1;  // the directory_iterator's own
}

// A soft RLIMIT_NOFILE under which exactly `room` more descriptors can be opened: open() takes
// the lowest free number and fails once none below the limit is free, so holes count too.
rlim_t LimitWithRoomFor(int room) {
  std::set<int> used;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd"))
    used.insert(std::stoi(e.path().filename().string()));
  const int lowest_free = ::open("/dev/null", O_RDONLY | O_CLOEXEC);  // the iterator's number
  ::close(lowest_free);
  used.erase(lowest_free);
  int n = 0;
  for (int free = 0;; ++n)
    if (!used.count(n) && ++free == room) return static_cast<rlim_t>(n + 1);
}

class FdCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < kFiles; ++i) {
      paths_.push_back(dir_.Join("f" + std::to_string(i)));
      contents_.push_back(testing::RandomBytes(i, 1000 + i));
      testing::WriteFile(paths_.back(), contents_.back());
    }
  }
  // Reads file i whole and checks its bytes.
  void ExpectReads(const RandomAccessFile& f, int i) {
    std::string got(contents_[i].size(), '\0');
    ASSERT_OK(f.Read(0, got.size(), got.data()));
    EXPECT_EQ(got, contents_[i]) << paths_[i];
  }
  static constexpr int kFiles = 24;
  testing::TempDir dir_;
  std::vector<std::string> paths_, contents_;
};

TEST_F(FdCacheTest, HoldsNoMoreDescriptorsThanItsCapacity) {
  FdCache cache(4);
  const size_t before = OpenFds();
  std::vector<std::unique_ptr<RandomAccessFile>> files(kFiles);
  for (int i = 0; i < kFiles; ++i) {
    ASSERT_OK(OpenCachedFile(paths_[i], &cache, &files[i]));
    EXPECT_EQ(files[i]->Size(), contents_[i].size());
    EXPECT_LE(OpenFds() - before, 4u) << "after opening " << i + 1 << " files";
  }
  for (int round = 0; round < 2; ++round)
    for (int i = 0; i < kFiles; ++i) {
      ExpectReads(*files[i], i);
      EXPECT_LE(OpenFds() - before, 4u);
    }
  EXPECT_EQ(cache.size(), 4u);
  EXPECT_GT(cache.opens(), static_cast<uint64_t>(2 * kFiles));  // evicted files were reopened
  files.clear();  // destroyed files give their descriptors back
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_EQ(OpenFds(), before);
}

TEST_F(FdCacheTest, NeverClosesADescriptorAReadHolds) {
  FdCache cache(2);
  std::unique_ptr<RandomAccessFile> first;
  ASSERT_OK(OpenCachedFile(paths_[0], &cache, &first));
  std::shared_ptr<CachedFd> held;  // what a read in progress holds
  struct stat st;
  ASSERT_EQ(::stat(paths_[0].c_str(), &st), 0);
  const FileIdentity id{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
                        static_cast<uint64_t>(st.st_size)};
  ASSERT_OK(cache.Get(1, paths_[0], id, &held));
  std::vector<std::unique_ptr<RandomAccessFile>> others(kFiles);
  for (int i = 1; i < kFiles; ++i) ASSERT_OK(OpenCachedFile(paths_[i], &cache, &others[i]));
  EXPECT_EQ(cache.size(), 2u);  // file 0 was evicted...
  char byte = 0;                // ...but its descriptor is still open for the read holding it
  ASSERT_EQ(::pread(held->fd(), &byte, 1, 0), 1) << strerror(errno);
  EXPECT_EQ(byte, contents_[0][0]);
}

TEST_F(FdCacheTest, ConcurrentReadsThroughATinyCacheSeeTheRightBytes) {
  FdCache cache(3);
  std::vector<std::unique_ptr<RandomAccessFile>> files(kFiles);
  for (int i = 0; i < kFiles; ++i) ASSERT_OK(OpenCachedFile(paths_[i], &cache, &files[i]));
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int k = 0; k < 400; ++k) {
        const int i = (k * 7 + t * 5) % kFiles;
        const size_t off = (k * 13) % contents_[i].size();
        const size_t n = std::min<size_t>(64, contents_[i].size() - off);
        std::string got(n, '\0');
        if (!files[i]->Read(off, n, got.data()).ok() || got != contents_[i].substr(off, n)) ++wrong;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_LE(cache.size(), 3u);
}

TEST_F(FdCacheTest, OutOfDescriptorsEvictsAndRetries) {
  FdCache cache(1000);  // far above what the limit below allows: only EMFILE bounds it
  struct rlimit saved;
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  struct rlimit low = saved;
  const size_t room = 4;
  low.rlim_cur = LimitWithRoomFor(room);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  std::vector<std::unique_ptr<RandomAccessFile>> files(kFiles);
  Status s;
  for (int i = 0; i < kFiles && s.ok(); ++i) s = OpenCachedFile(paths_[i], &cache, &files[i]);
  for (int i = 0; i < kFiles && s.ok(); ++i) {
    std::string got(contents_[i].size(), '\0');
    s = files[i]->Read(0, got.size(), got.data());
    if (s.ok()) EXPECT_EQ(got, contents_[i]);
  }
  const size_t held = cache.size();
  files.clear();
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &saved), 0);
  EXPECT_OK(s);
  EXPECT_LE(held, room);
  EXPECT_LT(held, static_cast<size_t>(kFiles));  // it had to give descriptors back
}

TEST_F(FdCacheTest, AFileReplacedAfterEvictionIsAnErrorNamingIt) {
  FdCache cache(1);
  std::unique_ptr<RandomAccessFile> a, b;
  ASSERT_OK(OpenCachedFile(paths_[0], &cache, &a));
  ASSERT_OK(OpenCachedFile(paths_[1], &cache, &b));  // evicts a's descriptor
  testing::WriteFile(paths_[0] + ".new", "other bytes");
  std::filesystem::rename(paths_[0] + ".new", paths_[0]);
  char byte;
  const Status s = a->Read(0, 1, &byte);
  ASSERT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_NE(s.message().find(paths_[0]), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("changed since"), std::string::npos) << s.ToString();
}

TEST_F(FdCacheTest, AMissingFileIsNotFoundNamingIt) {
  FdCache cache(2);
  std::unique_ptr<RandomAccessFile> f;
  const Status s = OpenCachedFile(dir_.Join("absent"), &cache, &f);
  ASSERT_TRUE(s.IsNotFound()) << s.ToString();
  EXPECT_NE(s.message().find(dir_.Join("absent")), std::string::npos);
}

TEST(DefaultFdCapacity, LeavesMostDescriptorsToTheProcess) {
  struct rlimit rl;
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &rl), 0);
  const size_t cap = DefaultFdCapacity();
  EXPECT_GE(cap, 4u);
  EXPECT_LE(cap, 512u);
  if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur >= 16) EXPECT_LE(cap, rl.rlim_cur / 4);
}

}  // namespace
}  // namespace sluice::shards
