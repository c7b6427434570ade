// Keeping batch memory alive while Python references it.
//
// The loader recycles a batch buffer by reusing it (Loader::Next, after consumer_batches more
// calls; Loader::Start) and frees it when the Loader is destroyed. A tensor made from a batch
// through DLPack may outlive all of that. Two pieces keep it valid:
//   - LeaseAllocator, the Loader's BatchAllocator: a buffer freed while a lease holds it is freed
//     only when the last lease lets go, so destroying a Loader never pulls memory from under a
//     tensor;
//   - BatchLease, one per batch handed to Python, held by the Batch object and by every DLPack
//     capsule or tensor made from it. CoreLoader (core_loader.h) never lets the loader reuse a
//     buffer whose lease is alive: it retires that Loader instead (see there).
// Neither takes the GIL: a tensor's deleter may run on any thread.
//
// In a process forked from the allocator's (core_loader.h, "fork()"), leases let go without
// locking or freeing: a pipeline thread of the parent may have held the lock at the fork, and the
// child's copy of the memory goes when it exits.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "loader/allocator.h"

namespace sluice::python {

class LeaseAllocator : public loader::BatchAllocator {
 public:
  // pin: blocks are handed to the host-registration hook (pinned memory for CUDA): new ones are
  // queued for TakeNew() and dead ones for TakeDead() instead of being freed at once, so the
  // consumer thread can unregister a block before FreeDead() frees it.
  explicit LeaseAllocator(bool pin = false) : pin_(pin) {}
  ~LeaseAllocator() override;

  void* Allocate(size_t bytes, size_t alignment) override;
  void Free(void* p, size_t bytes, size_t alignment) override;

  // A lease on the block that starts at p (nullptr and unknown pointers are ignored).
  void Ref(const void* p);
  void Unref(const void* p);

  // While keeping (between a retired Loader's destruction and its successor's Start), freed
  // blocks wait in a cache and Allocate of the same size takes them back: the successor's pool
  // reuses the memory already touched (and pinned) instead of faulting in new pages. Keep(false)
  // releases what the successor did not take.
  void Keep(bool keep);

  // Blocks allocated and not yet freed, and those among them freed by the loader but still held.
  size_t live_blocks() const;
  size_t deferred_blocks() const;
  // Blocks taken from the base allocator (not from the cache) so far.
  uint64_t allocations() const;

  // pin only: blocks allocated since the last call, and blocks ready to be unregistered and then
  // given to FreeDead().
  std::vector<std::pair<void*, size_t>> TakeNew();
  std::vector<std::pair<void*, size_t>> TakeDead();
  void FreeDead(void* p);

 private:
  struct Block {
    size_t bytes = 0;
    size_t alignment = 0;
    int refs = 0;
    bool freed = false;  // by the loader; really freed when refs reaches 0
  };
  // Called with mu_ held; frees now, or queues for unregistration when pinning.
  void Release(void* p, const Block& b);
  bool InForkedChild() const { return getpid() != owner_pid_; }

  const bool pin_;
  const pid_t owner_pid_ = getpid();
  bool keep_ = false;
  uint64_t allocations_ = 0;
  std::unordered_multimap<size_t, std::pair<void*, Block>> cache_;  // by bytes
  std::shared_ptr<loader::BatchAllocator> base_ = loader::DefaultAllocator();
  mutable std::mutex mu_;
  std::unordered_map<const void*, Block> blocks_;
  std::vector<std::pair<void*, size_t>> new_, dead_;
  std::unordered_map<void*, Block> dying_;  // in dead_, waiting for FreeDead
};

// The blocks of one handed-out batch, held while Python holds the batch or an array of it.
class BatchLease {
 public:
  BatchLease(std::shared_ptr<LeaseAllocator> allocator, std::vector<const void*> blocks);
  ~BatchLease();
  BatchLease(const BatchLease&) = delete;
  BatchLease& operator=(const BatchLease&) = delete;

 private:
  std::shared_ptr<LeaseAllocator> allocator_;
  std::vector<const void*> blocks_;
};

}  // namespace sluice::python
