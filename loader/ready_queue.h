// ReadyQueue: finished batches between the collate stage and the consumer. Bounded, so a slow
// consumer stalls the pipeline (and with it reads and decoding) instead of growing memory.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>

#include "loader/batch.h"

namespace sluice::loader {

class ReadyQueue {
 public:
  explicit ReadyQueue(size_t capacity) : capacity_(capacity ? capacity : 1) {}

  // Waits while full. False (and b not queued) once Close() was called.
  bool Push(Batch* b) {
    std::unique_lock<std::mutex> lock(mu_);
    not_full_.wait(lock, [&] { return closed_ || items_.size() < capacity_; });
    if (closed_) return false;
    items_.push_back(b);
    if (items_.size() > max_size_) max_size_ = items_.size();
    not_empty_.notify_one();
    return true;
  }
  // Waits for a batch; nullptr once closed and drained.
  Batch* Pop() {
    std::unique_lock<std::mutex> lock(mu_);
    not_empty_.wait(lock, [&] { return closed_ || !items_.empty(); });
    if (items_.empty()) return nullptr;
    Batch* b = items_.front();
    items_.pop_front();
    not_full_.notify_one();
    return b;
  }
  // No more pushes; Pop drains what is queued, then returns nullptr.
  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    not_full_.notify_all();
    not_empty_.notify_all();
  }
  // Removes whatever is queued (cancellation), for the caller to recycle.
  std::deque<Batch*> Drain() {
    std::lock_guard<std::mutex> lock(mu_);
    std::deque<Batch*> out;
    out.swap(items_);
    return out;
  }
  size_t max_size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return max_size_;
  }

 private:
  const size_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable not_full_, not_empty_;
  std::deque<Batch*> items_;
  bool closed_ = false;
  size_t max_size_ = 0;
};

}  // namespace sluice::loader
