// BatchPool: the batch buffers of one Loader, recycled from epoch to epoch so that in steady state
// no batch memory is allocated. Each buffer is owned by one party at a time: the pool, the
// pipeline (being filled), the ready queue, or the consumer.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "loader/allocator.h"
#include "loader/batch_buffer.h"

namespace sluice::loader {

class BatchPool {
 public:
  explicit BatchPool(std::shared_ptr<BatchAllocator> allocator);
  BatchPool(const BatchPool&) = delete;
  BatchPool& operator=(const BatchPool&) = delete;
  ~BatchPool();

  // Grows the pool to at least n batches (their memory is allocated on first use).
  void Reserve(size_t n);
  size_t size() const { return all_.size(); }
  BatchAllocator* allocator() const { return allocator_.get(); }

  // Gives every batch room for `feature_bytes` of features, `rows` rows and `token_bytes` of
  // token ids (packed batches; padded transcripts size theirs in collate), so that filling
  // batches allocates nothing. Call while every batch is free (between epochs). False when the
  // allocator fails; *allocations counts its calls.
  bool ReserveMemory(size_t feature_bytes, size_t rows, size_t token_bytes, uint64_t* allocations);
  // Packed batches of `rows` rows of L + 1 ids: room in every batch for their positions, doc ids,
  // loss masks and cu_seqlens (batch.h), so that collating them allocates nothing. Same contract.
  bool ReservePacked(size_t rows, size_t seq_len, uint64_t* allocations);
  // Conversation audio (batch.h): room in every batch for `count` audios and `feature_bytes` of
  // their features. Same contract.
  bool ReserveAudio(size_t count, size_t feature_bytes, uint64_t* allocations);
  // Padded conversation rows: room in every batch for `bytes` of loss mask (one per token id of
  // the batch's [rows, longest]). Same contract.
  bool ReserveLossMask(size_t bytes, uint64_t* allocations);

  // A free batch; waits while none is free. nullptr once Interrupt() was called.
  BatchBuffer* Acquire();
  void Release(BatchBuffer* b);
  // Wakes and fails Acquire() until Resume(): the pipeline is being cancelled.
  void Interrupt();
  void Resume();

 private:
  std::shared_ptr<BatchAllocator> allocator_;
  std::vector<std::unique_ptr<BatchBuffer>> all_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<BatchBuffer*> free_;
  bool interrupted_ = false;
};

}  // namespace sluice::loader
