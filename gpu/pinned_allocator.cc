#include "gpu/pinned_allocator.h"

#include <cstdio>
#include <mutex>
#include <new>

#include "gpu/cuda_check.h"
#include "gpu/device.h"

namespace sluice::gpu {
namespace {

// cudaHostAlloc hands out page-aligned memory; alignments above a page are met by asking for
// more and aligning inside (batch arrays use 256, loader::kBatchAlignment).
constexpr size_t kPage = 4096;

void* AlignUp(void* p, size_t alignment) {
  const uintptr_t v = reinterpret_cast<uintptr_t>(p);
  return reinterpret_cast<void*>((v + alignment - 1) & ~(uintptr_t{alignment} - 1));
}

}  // namespace

PinnedAllocator::PinnedAllocator(bool pinned, int device) : pinned_(pinned), device_(device) {}

PinnedAllocator::~PinnedAllocator() {
  // The loader frees every block before dropping its allocator; whatever is left is a leak in
  // the caller, but freeing it here keeps page-locked memory from outliving us.
  for (auto& [p, b] : blocks_) {
    if (b.pinned) {
      SLUICE_CUDA_LOG_IF_ERROR(cudaFreeHost(b.base));
    } else {
      ::operator delete(b.base, std::align_val_t(b.alignment));
    }
  }
}

void* PinnedAllocator::Allocate(size_t bytes, size_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) return nullptr;
  if (bytes == 0) bytes = 1;
  Block b{nullptr, bytes, alignment, false};
  void* aligned = nullptr;
  bool pinned_failed = false;
  if (pinned_) {
    const size_t extra = alignment > kPage ? alignment : 0;
    void* base = nullptr;
    // Per thread and cheap once the context exists; a loader thread does no other CUDA work.
    const char* call = "cudaSetDevice";
    cudaError_t err = cudaSetDevice(device_);
    if (err == cudaSuccess) {
      call = "cudaHostAlloc";
      err = cudaHostAlloc(&base, bytes + extra, cudaHostAllocPortable);
    }
    if (err == cudaSuccess) {
      b.base = base;
      b.bytes = bytes + extra;
      b.pinned = true;
      aligned = AlignUp(base, alignment);
    } else {
      // Out of page-locked memory (it is a limited resource): serve the batch from ordinary memory
      // rather than failing the epoch; the copy of this batch is then staged by the runtime.
      internal::LogCudaError(err, call, __FILE__, __LINE__);
      (void)cudaGetLastError();
      pinned_failed = true;
    }
  }
  if (aligned == nullptr) {
    void* base = ::operator new(bytes, std::align_val_t(alignment), std::nothrow);
    if (base == nullptr) return nullptr;
    b.base = base;
    aligned = base;
  }
  std::lock_guard<std::mutex> lock(mu_);
  blocks_.emplace(aligned, b);
  ++stats_.allocations;
  if (pinned_failed) ++stats_.pinned_failures;
  (b.pinned ? stats_.pinned_bytes : stats_.fallback_bytes) += bytes;
  return aligned;
}

void PinnedAllocator::Free(void* p, size_t bytes, size_t /*alignment*/) {
  if (p == nullptr) return;
  Block b;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = blocks_.find(p);
    if (it == blocks_.end()) {
      std::fprintf(stderr, "sluice: PinnedAllocator::Free of a pointer it did not allocate\n");
      return;
    }
    b = it->second;
    blocks_.erase(it);
    ++stats_.frees;
    (b.pinned ? stats_.pinned_bytes : stats_.fallback_bytes) -= (bytes == 0 ? 1 : bytes);
  }
  if (b.pinned) {
    SLUICE_CUDA_LOG_IF_ERROR(cudaFreeHost(b.base));
  } else {
    ::operator delete(b.base, std::align_val_t(b.alignment));
  }
}

PinnedAllocatorStats PinnedAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

std::shared_ptr<PinnedAllocator> MakePinnedAllocator(bool force_fallback) {
  if (force_fallback) return std::make_shared<PinnedAllocator>(false);
  int count = 0;
  const Status st = ProbeDevices(&count);
  if (!st.ok()) {
    static std::once_flag notice;
    std::call_once(notice, [&] {
      std::fprintf(stderr, "sluice: %s; batch buffers use ordinary (pageable) host memory\n",
                   st.message().c_str());
    });
    return std::make_shared<PinnedAllocator>(false);
  }
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) {
    (void)cudaGetLastError();
    device = 0;
  }
  return std::make_shared<PinnedAllocator>(true, device);
}

}  // namespace sluice::gpu
