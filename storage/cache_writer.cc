#include "storage/cache_writer.h"

#include <cstring>

namespace sluice::storage {

CacheWriter::CacheWriter(WriteFn write, uint64_t max_queued)
    : write_(std::move(write)), max_queued_(max_queued) {}

CacheWriter::~CacheWriter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();  // the loop empties the queue before it returns
}

void CacheWriter::Submit(const std::string& path, uint64_t offset, uint64_t n, const char* data) {
  auto e = std::make_shared<Entry>();
  e->path = path;
  e->offset = offset;
  e->bytes.assign(data, n);
  std::unique_lock<std::mutex> lock(mu_);
  // Counting the entry being written; one entry always fits, so a range bigger than the bound
  // still goes through.
  progress_.wait(lock, [&] { return queued_bytes_ == 0 || queued_bytes_ + n <= max_queued_; });
  if (!thread_.joinable()) thread_ = std::thread([this] { Loop(); });
  queued_bytes_ += n;
  pending_[path] = e;
  queue_.push_back(std::move(e));
  lock.unlock();
  cv_.notify_one();
}

bool CacheWriter::Find(const std::string& path, uint64_t n, char* dst) const {
  std::shared_ptr<const Entry> e;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto it = pending_.find(path);
    if (it == pending_.end() || it->second->bytes.size() != n) return false;
    e = it->second;  // the bytes stay alive while copied, even if written meanwhile
  }
  std::memcpy(dst, e->bytes.data(), n);
  return true;
}

bool CacheWriter::Pending(const std::string& path) const {
  std::lock_guard<std::mutex> lock(mu_);
  return pending_.count(path) != 0;
}

void CacheWriter::Drain() {
  std::unique_lock<std::mutex> lock(mu_);
  progress_.wait(lock, [&] { return pending_.empty(); });
}

void CacheWriter::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stop_, and nothing left to write
    std::shared_ptr<const Entry> e = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    write_(e->path, e->offset, e->bytes.size(), e->bytes.data());
    lock.lock();
    queued_bytes_ -= e->bytes.size();
    // A later Submit of the same range replaced it: that one is still to come.
    const auto it = pending_.find(e->path);
    if (it != pending_.end() && it->second == e) pending_.erase(it);
    progress_.notify_all();
  }
}

}  // namespace sluice::storage
