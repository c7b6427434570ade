#include "batch_lease.h"

namespace sluice::python {

LeaseAllocator::~LeaseAllocator() {
  // Every lease holds a shared_ptr to this allocator, so none is left; blocks still here were
  // never freed by a loader (none outlives its allocator) or wait for FreeDead.
  for (auto& [p, b] : dying_) base_->Free(p, b.bytes, b.alignment);
  for (auto& [bytes, entry] : cache_) base_->Free(entry.first, bytes, entry.second.alignment);
}

void* LeaseAllocator::Allocate(size_t bytes, size_t alignment) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto [first, last] = cache_.equal_range(bytes);
    for (auto it = first; it != last; ++it) {
      if (it->second.second.alignment != alignment) continue;
      void* p = it->second.first;
      blocks_[p] = Block{bytes, alignment, 0, false};  // still registered when pinning
      cache_.erase(it);
      return p;
    }
  }
  void* p = base_->Allocate(bytes, alignment);
  if (p == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  blocks_[p] = Block{bytes, alignment, 0, false};
  ++allocations_;
  if (pin_) new_.emplace_back(p, bytes);
  return p;
}

void LeaseAllocator::Free(void* p, size_t bytes, size_t alignment) {
  if (InForkedChild()) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = blocks_.find(p);
  if (it == blocks_.end()) {  // not ours: cannot happen, but never leak or double-free
    base_->Free(p, bytes, alignment);
    return;
  }
  if (it->second.refs > 0) {
    it->second.freed = true;
    return;
  }
  const Block b = it->second;
  blocks_.erase(it);
  Release(p, b);
}

void LeaseAllocator::Release(void* p, const Block& b) {
  if (keep_) {
    cache_.emplace(b.bytes, std::make_pair(p, b));
    return;
  }
  if (pin_) {
    // A block allocated and freed before the consumer registered it is dropped from new_ too.
    for (auto it = new_.begin(); it != new_.end(); ++it) {
      if (it->first == p) {
        new_.erase(it);
        base_->Free(p, b.bytes, b.alignment);
        return;
      }
    }
    dead_.emplace_back(p, b.bytes);
    dying_[p] = b;
    return;
  }
  base_->Free(p, b.bytes, b.alignment);
}

void LeaseAllocator::Keep(bool keep) {
  std::lock_guard<std::mutex> lock(mu_);
  keep_ = keep;
  if (keep) return;
  for (auto& [bytes, entry] : cache_) Release(entry.first, entry.second);
  cache_.clear();
}

void LeaseAllocator::Ref(const void* p) {
  if (p == nullptr || InForkedChild()) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = blocks_.find(p);
  if (it != blocks_.end()) ++it->second.refs;
}

void LeaseAllocator::Unref(const void* p) {
  if (p == nullptr || InForkedChild()) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = blocks_.find(p);
  if (it == blocks_.end()) return;
  if (--it->second.refs > 0 || !it->second.freed) return;
  const Block b = it->second;
  void* q = const_cast<void*>(it->first);
  blocks_.erase(it);
  Release(q, b);
}

size_t LeaseAllocator::live_blocks() const {
  std::lock_guard<std::mutex> lock(mu_);
  return blocks_.size();
}

size_t LeaseAllocator::deferred_blocks() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& [p, b] : blocks_) n += b.freed ? 1 : 0;
  return n;
}

uint64_t LeaseAllocator::allocations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return allocations_;
}

std::vector<std::pair<void*, size_t>> LeaseAllocator::TakeNew() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(new_, {});
}

std::vector<std::pair<void*, size_t>> LeaseAllocator::TakeDead() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(dead_, {});
}

void LeaseAllocator::FreeDead(void* p) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = dying_.find(p);
  if (it == dying_.end()) return;
  base_->Free(p, it->second.bytes, it->second.alignment);
  dying_.erase(it);
}

BatchLease::BatchLease(std::shared_ptr<LeaseAllocator> allocator, std::vector<const void*> blocks)
    : allocator_(std::move(allocator)), blocks_(std::move(blocks)) {
  for (const void* p : blocks_) allocator_->Ref(p);
}

BatchLease::~BatchLease() {
  for (const void* p : blocks_) allocator_->Unref(p);
}

}  // namespace sluice::python
