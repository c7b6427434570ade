#include "loader/batch_pool.h"

#include <algorithm>

namespace sluice::loader {

BatchPool::BatchPool(std::shared_ptr<BatchAllocator> allocator)
    : allocator_(allocator ? std::move(allocator) : DefaultAllocator()) {}

BatchPool::~BatchPool() = default;  // each Batch's arrays return their memory to the allocator

void BatchPool::Reserve(size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  while (all_.size() < n) {
    all_.push_back(std::make_unique<BatchBuffer>());
    BatchFields& f = all_.back()->fields();
    f.features.set_allocator(allocator_.get());
    f.lengths.set_allocator(allocator_.get());
    f.tokens.set_allocator(allocator_.get());
    f.token_lengths.set_allocator(allocator_.get());
    for (AlignedArray* a : {&f.positions, &f.doc_ids, &f.loss_mask, &f.cu_seqlens,
                            &f.row_cu_seqlens, &f.audio_features, &f.audio_lengths, &f.audio_spans})
      a->set_allocator(allocator_.get());
    free_.push_back(all_.back().get());
  }
}

bool BatchPool::ReserveMemory(size_t feature_bytes, size_t rows, size_t token_bytes,
                              uint64_t* allocations) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const std::unique_ptr<BatchBuffer>& b : all_) {
    BatchFields& f = b->fields();
    bool g1 = false, g2 = false, g3 = false, g4 = false;
    // A buffer still grown for an outlier batch of the last epoch (padded_collator.cc) goes back
    // to the reserved size, so that outliers of successive epochs do not add up.
    if (token_bytes > 0 &&
        f.tokens.capacity() >= 2 * std::max<size_t>(token_bytes, kBatchArrayUnit))
      f.tokens.Reset();
    if (!f.features.Reserve(std::max<size_t>(feature_bytes, 1), &g1) ||
        !f.lengths.Reserve(rows * sizeof(int32_t), &g2) ||
        !f.token_lengths.Reserve(rows * sizeof(int32_t), &g3) ||
        (token_bytes > 0 && !f.tokens.Reserve(token_bytes, &g4)))
      return false;
    *allocations += g1 + g2 + g3 + g4;
    b->token_reserve = token_bytes;
  }
  return true;
}

bool BatchPool::ReservePacked(size_t rows, size_t seq_len, uint64_t* allocations) {
  std::lock_guard<std::mutex> lock(mu_);
  const size_t columns = rows * seq_len;
  for (const std::unique_ptr<BatchBuffer>& b : all_) {
    BatchFields& f = b->fields();
    const std::pair<AlignedArray*, size_t> arrays[] = {
        {&f.positions, columns * sizeof(int32_t)},
        {&f.doc_ids, columns * sizeof(int64_t)},
        {&f.loss_mask, columns},
        {&f.cu_seqlens, (columns + 1) * sizeof(int32_t)},
        {&f.row_cu_seqlens, rows * (seq_len + 1) * sizeof(int32_t)}};
    for (const auto& [a, bytes] : arrays) {
      bool grew = false;
      if (!a->Reserve(bytes, &grew)) return false;
      *allocations += grew;
    }
  }
  return true;
}

bool BatchPool::ReserveAudio(size_t count, size_t feature_bytes, uint64_t* allocations) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const std::unique_ptr<BatchBuffer>& b : all_) {
    BatchFields& f = b->fields();
    const std::pair<AlignedArray*, size_t> arrays[] = {
        {&f.audio_features, std::max<size_t>(feature_bytes, 1)},
        {&f.audio_lengths, std::max<size_t>(count, 1) * sizeof(int32_t)},
        {&f.audio_spans, std::max<size_t>(count, 1) * 3 * sizeof(int32_t)}};
    for (const auto& [a, bytes] : arrays) {
      bool grew = false;
      if (!a->Reserve(bytes, &grew)) return false;
      *allocations += grew;
    }
  }
  return true;
}

bool BatchPool::ReserveLossMask(size_t bytes, uint64_t* allocations) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const std::unique_ptr<BatchBuffer>& b : all_) {
    bool grew = false;
    if (!b->fields().loss_mask.Reserve(std::max<size_t>(bytes, 1), &grew)) return false;
    *allocations += grew;
  }
  return true;
}

BatchBuffer* BatchPool::Acquire() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return interrupted_ || !free_.empty(); });
  if (interrupted_) return nullptr;
  BatchBuffer* b = free_.back();
  free_.pop_back();
  return b;
}

void BatchPool::Release(BatchBuffer* b) {
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
