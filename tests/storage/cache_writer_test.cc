// CacheWriter (storage/cache_writer.h): entries are written on its thread, readable from the queue
// until then, the queue's bytes are bounded, and Drain and the destructor leave nothing unwritten.
#include "storage/cache_writer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace sluice::storage {
namespace {

// A write function that holds every write until Open(), recording what it wrote.
class Gate {
 public:
  CacheWriter::WriteFn Fn() {
    return [this](const std::string& path, uint64_t, uint64_t n, const char* data) {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return open_; });
      written_.push_back(path + "=" + std::string(data, n));
    };
  }
  void Open() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }
  std::vector<std::string> written() {
    std::lock_guard<std::mutex> lock(mu_);
    return written_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
  std::vector<std::string> written_;
};

TEST(CacheWriter, RangesWaitingToBeWrittenAreReadFromTheQueue) {
  Gate gate;
  CacheWriter w(gate.Fn(), 1 << 20);
  w.Submit("a", 0, 5, "hello");
  w.Submit("b", 5, 5, "world");
  char buf[5];
  ASSERT_TRUE(w.Find("b", 5, buf));
  EXPECT_EQ(std::string(buf, 5), "world");
  EXPECT_TRUE(w.Pending("a"));
  EXPECT_FALSE(w.Find("a", 4, buf)) << "another length is another range";
  EXPECT_FALSE(w.Find("c", 5, buf));
  EXPECT_TRUE(gate.written().empty()) << "the writes wait for the gate";
  gate.Open();
  w.Drain();
  EXPECT_EQ(gate.written(), (std::vector<std::string>{"a=hello", "b=world"}));
  EXPECT_FALSE(w.Pending("a"));
  EXPECT_FALSE(w.Find("b", 5, buf)) << "written: read from disk from now on";
}

TEST(CacheWriter, SubmitWaitsWhileTheQueueHoldsItsBound) {
  Gate gate;
  CacheWriter w(gate.Fn(), 8);
  w.Submit("a", 0, 6, "123456");  // one entry always fits, even past the bound
  std::atomic<bool> second{false};
  std::thread t([&] {
    w.Submit("b", 6, 6, "abcdef");  // 12 bytes > 8: waits until "a" is written
    second = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(second) << "the queue grew past its bound";
  gate.Open();
  t.join();
  EXPECT_TRUE(second);
  w.Drain();
  EXPECT_EQ(gate.written().size(), 2u);
}

TEST(CacheWriter, DestructorWritesEverythingQueued) {
  Gate gate;
  {
    CacheWriter w(gate.Fn(), 1 << 20);
    for (int i = 0; i < 10; ++i) w.Submit(std::to_string(i), i, 1, "x");
    gate.Open();
  }
  EXPECT_EQ(gate.written().size(), 10u);
}

}  // namespace
}  // namespace sluice::storage
