#include "loader/allocator.h"

#include <cstring>
#include <new>

namespace sluice::loader {
namespace {

class HostAllocator : public BatchAllocator {
 public:
  void* Allocate(size_t bytes, size_t alignment) override {
    return ::operator new(bytes, std::align_val_t(alignment), std::nothrow);
  }
  void Free(void* p, size_t, size_t alignment) override {
    ::operator delete(p, std::align_val_t(alignment));
  }
};

}  // namespace

std::shared_ptr<BatchAllocator> DefaultAllocator() {
  static const std::shared_ptr<BatchAllocator> host = std::make_shared<HostAllocator>();
  return host;
}

bool AlignedArray::Reserve(size_t bytes, bool* grew) {
  if (grew) *grew = false;
  if (bytes <= capacity_) return true;
  Reset();
  const size_t cap = (bytes + kBatchArrayUnit - 1) / kBatchArrayUnit * kBatchArrayUnit;
  data_ = allocator_->Allocate(cap, kBatchAlignment);
  if (data_ == nullptr) return false;
  // Touch every page now (Loader::Start), so first-touch page faults do not land in the decode
  // threads and resident memory is the pool's size from the start, not a function of how many
  // batches an epoch happened to fill.
  std::memset(data_, 0, cap);
  capacity_ = cap;
  if (grew) *grew = true;
  return true;
}

void AlignedArray::Reset() {
  if (data_ != nullptr) allocator_->Free(data_, capacity_, kBatchAlignment);
  data_ = nullptr;
  capacity_ = 0;
}

}  // namespace sluice::loader
