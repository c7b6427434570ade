// ReadyQueue: finished batches between the collate stage and the consumer, in plan order.
//
// Pushing never waits: what bounds the batches in it is the batch pool (every batch in the queue
// is a pool buffer), and a slow consumer stalls the read stage when the pool runs dry instead. A
// push that waited for room would hold a pipeline thread asleep inside the collate stage, and one
// collate step can finish more batches than ready_batches (a packed block completes a dozen
// small batches at once), which serialised the decode threads behind consumer wake-ups.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>

#include "loader/batch_buffer.h"

namespace sluice::loader {

class ReadyQueue {
 public:
  // Appends batches [b, b + n) at once (one lock, one wake-up). False (and nothing queued) once
  // Close() was called.
  bool Push(BatchBuffer* const* b, size_t n) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (closed_) return false;
      if (n == 0) return true;
      const bool was_empty = items_.empty();  // the consumer waits only on an empty queue
      items_.insert(items_.end(), b, b + n);
      if (items_.size() > max_size_) max_size_ = items_.size();
      if (!was_empty) return true;
    }
    not_empty_.notify_one();
    return true;
  }
  // Waits for a batch; nullptr once closed and drained.
  BatchBuffer* Pop() {
    std::unique_lock<std::mutex> lock(mu_);
    not_empty_.wait(lock, [&] { return closed_ || !items_.empty(); });
    if (items_.empty()) return nullptr;
    BatchBuffer* b = items_.front();
    items_.pop_front();
    return b;
  }
  // Pop waiting at most `timeout`: false, with *out untouched, when it passed with the queue
  // empty and open.
  bool PopFor(std::chrono::nanoseconds timeout, BatchBuffer** out) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!not_empty_.wait_for(lock, timeout, [&] { return closed_ || !items_.empty(); }))
      return false;
    *out = nullptr;
    if (items_.empty()) return true;
    *out = items_.front();
    items_.pop_front();
    return true;
  }
  // No more pushes; Pop drains what is queued, then returns nullptr.
  void Close() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closed_ = true;
    }
    not_empty_.notify_all();
  }
  // Removes whatever is queued (cancellation), for the caller to recycle.
  std::deque<BatchBuffer*> Drain() {
    std::lock_guard<std::mutex> lock(mu_);
    std::deque<BatchBuffer*> out;
    out.swap(items_);
    return out;
  }
  size_t max_size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return max_size_;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable not_empty_;
  std::deque<BatchBuffer*> items_;
  bool closed_ = false;
  size_t max_size_ = 0;
};

}  // namespace sluice::loader
