// FakeRemote: a test-only Storage over another one (a local directory) that behaves like remote
// storage as far as the block cache and the loader can tell: it counts requests and bytes,
// reports them through Counters(), and can add latency, fail reads or count retries.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "shards/storage.h"

namespace sluice::storage::testing {

class FakeRemote final : public shards::Storage, public std::enable_shared_from_this<FakeRemote> {
 public:
  explicit FakeRemote(std::shared_ptr<const shards::Storage> inner) : inner_(std::move(inner)) {}
  static std::shared_ptr<FakeRemote> Over(std::shared_ptr<const shards::Storage> inner) {
    return std::make_shared<FakeRemote>(std::move(inner));
  }

  // Knobs, set at any time.
  mutable std::atomic<int> latency_us{0};        // sleep per Read
  mutable std::atomic<int> fail_reads{0};        // the next this many Reads fail with IOError
  mutable std::atomic<uint64_t> retry_every{0};  // every Nth Read counts as sent twice (a retry)
  mutable std::atomic<int> damage_reads{0};      // the next this many Reads return a bit flipped

  // What was asked of it.
  mutable std::atomic<uint64_t> reads{0};       // RandomAccessFile::Read calls that reached it
  mutable std::atomic<uint64_t> bytes{0};       // bytes those Reads returned
  mutable std::atomic<uint64_t> will_needs{0};  // WillNeed calls that reached it
  mutable std::atomic<uint64_t> file_reads{0};  // ReadFile calls (manifest.json)
  mutable std::atomic<uint64_t> retries{0};

  const std::string& location() const override { return inner_->location(); }
  std::string Where(const std::string& name) const override { return inner_->Where(name); }
  Status ReadFile(const std::string& name, std::string* out) const override;
  Status OpenFile(const std::string& name, uint64_t expected_size,
                  std::unique_ptr<RandomAccessFile>* out) const override;
  // requests = Reads + ReadFiles + retries, bytes_fetched = bytes, retries.
  shards::StorageCounters Counters() const override;

 private:
  friend class FakeRemoteFile;
  std::shared_ptr<const shards::Storage> inner_;
};

}  // namespace sluice::storage::testing
