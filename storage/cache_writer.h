// CacheWriter: writes block cache entries on a thread of its own, so that a miss costs the
// loader's serial read stage a copy of the bytes, not the write. Writing a new file is the
// expensive part of a miss: the kernel allocates page-cache pages for it (about 4 ms per MiB on
// ext4 on the 2-core development machine, against 0.06 ms to copy a MiB), and in the read stage
// that time stalls the whole pipeline (docs/remote.md, "Measured: the block cache").
//
// Until an entry is on disk, reads of its range are served from the queued bytes (Find), so a
// range is fetched once per process whatever the writer's progress. Counters and tests that look
// at the directory call Drain first; the destructor drains too, so a later process finds every
// entry this one kept.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace sluice::storage {

class CacheWriter {
 public:
  // `write(path, offset, n, data)` writes one entry and accounts for it (block_cache.cc: the
  // write, its retry, the budget and the counters); it runs on the writer's thread.
  using WriteFn =
      std::function<void(const std::string& path, uint64_t offset, uint64_t n, const char* data)>;
  // At most `max_queued` bytes wait to be written: Submit blocks beyond, so memory stays bounded
  // when the disk is slower than the remote.
  CacheWriter(WriteFn write, uint64_t max_queued);
  ~CacheWriter();  // drains, then stops the thread
  CacheWriter(const CacheWriter&) = delete;
  CacheWriter& operator=(const CacheWriter&) = delete;

  // Queues a copy of data[0, n) for `path`.
  void Submit(const std::string& path, uint64_t offset, uint64_t n, const char* data);
  // Copies the queued bytes of `path` into dst when it is still waiting to be written.
  bool Find(const std::string& path, uint64_t n, char* dst) const;
  bool Pending(const std::string& path) const;
  // Returns once everything submitted before the call is written (or failed).
  void Drain();

  static constexpr uint64_t kDefaultMaxQueued = 64ull << 20;

 private:
  struct Entry {
    std::string path;
    uint64_t offset = 0;
    std::string bytes;
  };
  void Loop();

  const WriteFn write_;
  const uint64_t max_queued_;
  mutable std::mutex mu_;
  std::condition_variable cv_;        // the thread: work or stop
  std::condition_variable progress_;  // Submit and Drain: an entry was written
  std::deque<std::shared_ptr<const Entry>> queue_;
  std::map<std::string, std::shared_ptr<const Entry>> pending_;  // queued or being written
  uint64_t queued_bytes_ = 0;                                    // queued or being written
  bool stop_ = false;
  std::thread thread_;  // started by the first Submit: a cache that only hits needs none
};

}  // namespace sluice::storage
