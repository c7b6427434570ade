// Shard files opened on demand through a bounded, process-wide cache of descriptors
// (docs/loader.md, "File descriptors"). A dataset of thousands of shards must open and train
// under the common `ulimit -n 1024`, and the rest of the process (sockets, NCCL, checkpoints,
// the tokenizer) needs descriptors too: a local shard file holds none of its own, it borrows
// one from the cache for each read.
//
// Contract:
// - at most capacity() descriptors stay open in the cache; a descriptor is never closed while a
//   read uses it (readers hold a shared_ptr: an evicted descriptor closes when its last read
//   ends), so the process holds at most capacity() plus one per concurrent read;
// - an open() that fails with EMFILE or ENFILE evicts the least recently used descriptor and
//   retries; the error, when nothing is left to give back, names the file and the limit;
// - a file reopened after eviction must be the one first opened (same device, inode and size),
//   else reads fail naming it: a shard replaced under a running loader is an error, not new data.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/file.h"

namespace sluice::shards {

// An open descriptor; closed by the destructor.
class CachedFd {
 public:
  explicit CachedFd(int fd) : fd_(fd) {}
  ~CachedFd();
  CachedFd(const CachedFd&) = delete;
  CachedFd& operator=(const CachedFd&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

// What a file was when first opened; a reopen must find the same.
struct FileIdentity {
  uint64_t device = 0, inode = 0, size = 0;
};

// The default capacity: min(soft RLIMIT_NOFILE / 4, 512), at least 4. A quarter leaves most
// descriptors to the rest of the process; 512 is plenty for the shards one epoch reads at once.
size_t DefaultFdCapacity();

class FdCache {
 public:
  // capacity 0: DefaultFdCapacity(), read again at every open, so a process that raises (or a
  // test that lowers) its limit after start is followed.
  explicit FdCache(size_t capacity = 0) : fixed_capacity_(capacity) {}
  ~FdCache();
  // The cache every local shard file uses.
  static FdCache& Global();

  // A key for one file; Forget(key) when the file object is gone.
  uint64_t NewKey();
  // The descriptor for `key`, opened from `path` when the cache does not hold it; a reopened
  // file is checked against `identity`.
  Status Get(uint64_t key, const std::string& path, const FileIdentity& identity,
             std::shared_ptr<CachedFd>* out);
  // Adds a descriptor already open (the one OpenCachedFile stat'ed).
  void Put(uint64_t key, std::shared_ptr<CachedFd> fd);
  void Forget(uint64_t key);
  // open(path) read-only; EMFILE or ENFILE give cached descriptors back and try again.
  Status OpenRetrying(const std::string& path, int* fd);

  size_t capacity() const;
  size_t size() const;     // descriptors the cache holds now
  uint64_t opens() const;  // open() calls so far (each a miss)

 private:
  struct Entry {
    std::shared_ptr<CachedFd> fd;
    std::list<uint64_t>::iterator lru;
  };
  // Removes least recently used entries until at most `keep` remain; their descriptors go to
  // *closed, to be released outside the lock.
  void EvictLocked(size_t keep, std::vector<std::shared_ptr<CachedFd>>* closed);

  const size_t fixed_capacity_;
  mutable std::mutex mu_;
  uint64_t next_key_ = 1;
  uint64_t opens_ = 0;
  std::list<uint64_t> lru_;  // most recently used first
  std::unordered_map<uint64_t, Entry> entries_;
};

// Opens `path` (open, fstat: it must be a regular file; the descriptor goes into `cache`) and
// returns a file whose reads borrow a descriptor from `cache`. Size() is the size at open.
Status OpenCachedFile(const std::string& path, FdCache* cache,
                      std::unique_ptr<RandomAccessFile>* out);

}  // namespace sluice::shards
