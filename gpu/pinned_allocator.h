// PinnedAllocator: batch memory for the loader's pool in page-locked host memory (cudaHostAlloc),
// so the feeder's cudaMemcpyAsync is a true DMA that overlaps compute. Plug it in with
//
//   options.allocator = sluice::gpu::MakePinnedAllocator();
//
// Where the CUDA runtime reports no usable device (no driver: error 35, no GPU: error 100), it
// falls back to ordinary aligned host memory and says so once per process on stderr, so the
// same binary runs on CPU-only machines. The loader allocates only when its pool grows (the first
// batches of an epoch), so the bookkeeping below is never on the per-batch path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "loader/allocator.h"

namespace sluice::gpu {

struct PinnedAllocatorStats {
  uint64_t allocations = 0;  // Allocate calls that returned memory
  uint64_t frees = 0;
  uint64_t pinned_bytes = 0;     // live bytes in page-locked memory
  uint64_t fallback_bytes = 0;   // live bytes in ordinary memory
  uint64_t pinned_failures = 0;  // cudaHostAlloc failures served from ordinary memory
};

class PinnedAllocator : public loader::BatchAllocator {
 public:
  // `pinned`: use cudaHostAlloc on `device`; false is the fallback mode (aligned operator new).
  // The loader calls Allocate from its own threads, whose current device is 0 until they set
  // one: Allocate makes `device` current on the calling thread first, so each rank of a node
  // allocates in its own GPU's context rather than all of them in GPU 0's.
  explicit PinnedAllocator(bool pinned, int device = 0);
  ~PinnedAllocator() override;

  void* Allocate(size_t bytes, size_t alignment) override;
  void Free(void* p, size_t bytes, size_t alignment) override;

  bool pinned() const { return pinned_; }
  int device() const { return device_; }
  PinnedAllocatorStats stats() const;

 private:
  struct Block {
    void* base;        // what cudaHostAlloc / operator new returned
    size_t bytes;      // bytes asked of it
    size_t alignment;  // operator new's alignment (fallback blocks)
    bool pinned;
  };
  const bool pinned_;
  const int device_;
  mutable std::mutex mu_;
  std::unordered_map<void*, Block> blocks_;  // by aligned pointer handed out
  PinnedAllocatorStats stats_;
};

// Pinned memory on the calling thread's current device (the rank's: make it after SetDevice) when
// a CUDA device is usable, else the fallback with a one-line notice on stderr (printed once per
// process). `force_fallback` skips the probe (tests, pageable comparisons).
std::shared_ptr<PinnedAllocator> MakePinnedAllocator(bool force_fallback = false);

}  // namespace sluice::gpu
