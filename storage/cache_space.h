// CacheSpace: the size budget of one dataset's directory in the block cache, shared by every
// process that caches the dataset there (the ranks of a node). Policy: fill until the budget is
// reached, then keep. Nothing is evicted to make room, so epochs over a dataset bigger than the
// budget do not cycle entries out and in again (an LRU smaller than the dataset misses every
// read of every epoch); the entries kept are hits every epoch. What leaves: entries of shards the
// dataset no longer has (Sweep), entries that fail verification, and stale temporary files.
#pragma once

#include <cstdint>
#include <mutex>
#include <set>
#include <string>

namespace sluice::storage {

class CacheSpace {
 public:
  // `dir` is the dataset's directory in the cache; budget 0 = no cap.
  CacheSpace(std::string dir, uint64_t budget) : dir_(std::move(dir)), budget_(budget) {}

  // Deletes the subdirectories of dir not named in `keep` (shards of an older version of the
  // dataset, or gone from it), and temporary files older than kStaleTempSeconds; then counts
  // what the kept subdirectories hold.
  void Sweep(const std::set<std::string>& keep);
  // True when an entry of `bytes` (file size) fits the budget; it is then counted as used.
  bool Reserve(uint64_t bytes);
  // True when the next Reserve recounts the directory. A recount sees written entries only, so
  // the caller first waits for the entries it reserved to be written (CacheWriter::Drain), or
  // the count would leave them out and the budget would be overshot.
  bool ScanDue() const;
  // Gives back what Reserve counted: the write failed, or the entry was deleted.
  void Release(uint64_t bytes);
  uint64_t used() const;

  // Temporary files older than this are strays of a crashed writer (a write takes milliseconds).
  static constexpr int kStaleTempSeconds = 600;

 private:
  // Recounts dir from the names of its entries (no stat per file: the name holds the length).
  void RescanLocked();

  const std::string dir_;
  const uint64_t budget_;
  mutable std::mutex mu_;
  std::set<std::string> keep_;
  uint64_t used_ = 0;        // at the last scan, plus what this process reserved since
  uint64_t since_scan_ = 0;  // bytes this process reserved since the last scan
  bool full_ = false;        // an entry did not fit: the rest do not either, until a Release
};

}  // namespace sluice::storage
