#include "fake_remote.h"

#include <chrono>
#include <thread>

namespace sluice::storage::testing {

class FakeRemoteFile final : public RandomAccessFile {
 public:
  FakeRemoteFile(std::shared_ptr<const FakeRemote> remote, std::unique_ptr<RandomAccessFile> inner)
      : remote_(std::move(remote)), inner_(std::move(inner)) {}

  Status Read(uint64_t offset, size_t n, char* dst) const override {
    const FakeRemote& r = *remote_;
    const uint64_t count = r.reads.fetch_add(1) + 1;
    if (r.latency_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(r.latency_us));
    int left = r.fail_reads.load();
    while (left > 0 && !r.fail_reads.compare_exchange_weak(left, left - 1)) {
    }
    if (left > 0)
      return Status::IOError(name() + ": simulated failure of " + std::to_string(n) +
                             " bytes at offset " + std::to_string(offset));
    if (r.retry_every > 0 && count % r.retry_every == 0) r.retries.fetch_add(1);
    SLUICE_RETURN_IF_ERROR(inner_->Read(offset, n, dst));
    int damage = r.damage_reads.load();
    while (damage > 0 && !r.damage_reads.compare_exchange_weak(damage, damage - 1)) {
    }
    if (damage > 0 && n > 0) dst[n / 2] ^= 0x10;
    r.bytes.fetch_add(n);
    return Status::OK();
  }
  void WillNeed(uint64_t, size_t) const override { remote_->will_needs.fetch_add(1); }
  uint64_t Size() const override { return inner_->Size(); }
  const std::string& name() const override { return inner_->name(); }

 private:
  std::shared_ptr<const FakeRemote> remote_;
  std::unique_ptr<RandomAccessFile> inner_;
};

Status FakeRemote::ReadFile(const std::string& name, std::string* out) const {
  file_reads.fetch_add(1);
  return inner_->ReadFile(name, out);
}

Status FakeRemote::OpenFile(const std::string& name, uint64_t expected_size,
                            std::unique_ptr<RandomAccessFile>* out) const {
  std::unique_ptr<RandomAccessFile> inner;
  SLUICE_RETURN_IF_ERROR(inner_->OpenFile(name, expected_size, &inner));
  *out = std::make_unique<FakeRemoteFile>(shared_from_this(), std::move(inner));
  return Status::OK();
}

shards::StorageCounters FakeRemote::Counters() const {
  shards::StorageCounters c;
  c.requests = reads + file_reads + retries;
  c.bytes_fetched = bytes;
  c.retries = retries;
  return c;
}

}  // namespace sluice::storage::testing
