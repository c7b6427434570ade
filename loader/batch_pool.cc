#include "loader/batch_pool.h"

namespace sluice::loader {

BatchPool::BatchPool(std::shared_ptr<BatchAllocator> allocator)
    : allocator_(allocator ? std::move(allocator) : DefaultAllocator()) {}

BatchPool::~BatchPool() = default;  // each Batch's arrays return their memory to the allocator

void BatchPool::Reserve(size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  while (all_.size() < n) {
    all_.push_back(std::make_unique<Batch>());
    Batch* b = all_.back().get();
    b->features_.set_allocator(allocator_.get());
    b->lengths_.set_allocator(allocator_.get());
    b->tokens_.set_allocator(allocator_.get());
    b->token_lengths_.set_allocator(allocator_.get());
    free_.push_back(b);
  }
}

bool BatchPool::ReserveMemory(size_t feature_bytes, size_t rows, size_t token_bytes,
                              uint64_t* allocations) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const std::unique_ptr<Batch>& b : all_) {
    bool g1 = false, g2 = false, g3 = false, g4 = false;
    if (!b->features_.Reserve(std::max<size_t>(feature_bytes, 1), &g1) ||
        !b->lengths_.Reserve(rows * sizeof(int32_t), &g2) ||
        !b->token_lengths_.Reserve(rows * sizeof(int32_t), &g3) ||
        (token_bytes > 0 && !b->tokens_.Reserve(token_bytes, &g4)))
      return false;
    *allocations += g1 + g2 + g3 + g4;
  }
  return true;
}

Batch* BatchPool::Acquire() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return interrupted_ || !free_.empty(); });
  if (interrupted_) return nullptr;
  Batch* b = free_.back();
  free_.pop_back();
  return b;
}

void BatchPool::Release(Batch* b) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(b);
  }
  cv_.notify_one();
}

void BatchPool::Interrupt() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    interrupted_ = true;
  }
  cv_.notify_all();
}

void BatchPool::Resume() {
  std::lock_guard<std::mutex> lock(mu_);
  interrupted_ = false;
}

}  // namespace sluice::loader
