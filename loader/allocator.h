// BatchAllocator: where batch memory comes from. The loader asks for it only when a pooled batch
// buffer must grow (the first batches of a run), never per batch in steady state. gpu/ plugs a
// pinned-memory allocator in here so batches can be copied to the device asynchronously.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace sluice::loader {

class BatchAllocator {
 public:
  virtual ~BatchAllocator() = default;
  // `bytes` of memory aligned to `alignment` (a power of two), or nullptr when out of memory.
  // May be called from any loader thread, but never twice at once for the same loader.
  virtual void* Allocate(size_t bytes, size_t alignment) = 0;
  // Returns memory from Allocate with the same bytes and alignment.
  virtual void Free(void* p, size_t bytes, size_t alignment) = 0;
};

// Host memory from aligned operator new. Shared, stateless.
std::shared_ptr<BatchAllocator> DefaultAllocator();

// Alignment of every batch array: a cache line, and enough for any vector load or DMA engine.
inline constexpr size_t kBatchAlignment = 256;

// AlignedArray capacities are whole units of this many bytes: a later, slightly larger plan
// maximum often still fits.
inline constexpr size_t kBatchArrayUnit = 64 << 10;

// A growable array of bytes owned through a BatchAllocator. Reserve keeps the capacity (and the
// contents are not preserved when it grows: callers rewrite the whole array per batch).
class AlignedArray {
 public:
  AlignedArray() = default;
  ~AlignedArray() { Reset(); }
  AlignedArray(const AlignedArray&) = delete;
  AlignedArray& operator=(const AlignedArray&) = delete;

  void set_allocator(BatchAllocator* a) { allocator_ = a; }
  // False when the allocator returned nullptr. *grew (may be null) says whether it allocated.
  bool Reserve(size_t bytes, bool* grew);
  void Reset();
  void* data() { return data_; }
  const void* data() const { return data_; }
  size_t capacity() const { return capacity_; }

 private:
  BatchAllocator* allocator_ = nullptr;
  void* data_ = nullptr;
  size_t capacity_ = 0;
};

}  // namespace sluice::loader
