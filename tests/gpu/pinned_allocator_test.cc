// The pinned allocator: aligned memory in either mode, the fallback (with its one notice) where
// the runtime has no device, real page-locked memory where it has one.
#include "gpu/pinned_allocator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <thread>

#include "gpu/device.h"
#include "require_gpu.h"

namespace sluice::gpu {
namespace {

bool Aligned(const void* p, size_t a) { return reinterpret_cast<uintptr_t>(p) % a == 0; }

TEST(PinnedAllocator, FallbackGivesAlignedWritableMemory) {
  auto a = MakePinnedAllocator(/*force_fallback=*/true);
  EXPECT_FALSE(a->pinned());
  for (size_t align : {size_t{64}, loader::kBatchAlignment, size_t{4096}, size_t{65536}}) {
    void* p = a->Allocate(1000, align);
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(Aligned(p, align)) << align;
    std::memset(p, 0x5A, 1000);
    a->Free(p, 1000, align);
  }
  const PinnedAllocatorStats s = a->stats();
  EXPECT_EQ(s.allocations, 4u);
  EXPECT_EQ(s.frees, 4u);
  EXPECT_EQ(s.fallback_bytes, 0u);
  EXPECT_EQ(s.pinned_bytes, 0u);
}

TEST(PinnedAllocator, RejectsAlignmentThatIsNotAPowerOfTwo) {
  auto a = MakePinnedAllocator(true);
  EXPECT_EQ(a->Allocate(16, 48), nullptr);
}

TEST(PinnedAllocator, WithoutADeviceFallsBackWithOneNoticeAndNeverCrashes) {
  if (HaveDevice()) GTEST_SKIP() << "a CUDA device is present: the fallback is not taken";
  ::testing::internal::CaptureStderr();
  auto a = MakePinnedAllocator();
  auto b = MakePinnedAllocator();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(a->pinned());
  EXPECT_FALSE(b->pinned());
  // Once per process: this test may not be the first to ask, so at most one line.
  EXPECT_LE(std::count(err.begin(), err.end(), '\n'), 1) << err;
  void* p = a->Allocate(4096, loader::kBatchAlignment);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(a->stats().fallback_bytes, 4096u);
  a->Free(p, 4096, loader::kBatchAlignment);
  int count = -1;
  const Status st = ProbeDevices(&count);
  EXPECT_TRUE(st.IsUnsupported());
  EXPECT_NE(st.message().find("cudaGetDeviceCount"), std::string::npos) << st.message();
  EXPECT_EQ(count, 0);
}

TEST(PinnedAllocator, WithADeviceGivesPageLockedMemory) {
  if (!HaveDevice()) SLUICE_GPU_UNAVAILABLE("no CUDA device");
  auto a = MakePinnedAllocator();
  ASSERT_TRUE(a->pinned());
  for (size_t align : {loader::kBatchAlignment, size_t{65536}}) {
    void* p = a->Allocate(1 << 20, align);
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(Aligned(p, align));
    EXPECT_TRUE(IsPinnedHostPointer(p));
    a->Free(p, 1 << 20, align);
  }
  EXPECT_EQ(a->stats().pinned_bytes, 0u);
  EXPECT_EQ(a->stats().pinned_failures, 0u);
}

// The loader's decode threads grow its pool, so they call Allocate: a thread's current device is
// 0 until it sets one, and without the allocator setting the device of the rank that made it,
// every rank of a multi-GPU node would allocate (and make a context) on GPU 0.
TEST(PinnedAllocator, OtherThreadsAllocateOnTheDeviceCurrentWhenItWasMade) {
  int count = 0;
  const Status st = ProbeDevices(&count);
  if (!st.ok()) SLUICE_GPU_UNAVAILABLE(st.message());
  if (count < 2) GTEST_SKIP() << "needs two devices (the SIMT layer has " << count << ")";
  ASSERT_TRUE(SetDevice(1).ok());
  auto a = MakePinnedAllocator();
  ASSERT_TRUE(SetDevice(0).ok());
  ASSERT_TRUE(a->pinned());
  void* p = nullptr;
  std::thread loader_thread([&] { p = a->Allocate(1 << 16, loader::kBatchAlignment); });
  loader_thread.join();
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(IsPinnedHostPointer(p));
  EXPECT_EQ(PinnedHostPointerDevice(p), 1);
  a->Free(p, 1 << 16, loader::kBatchAlignment);
}

}  // namespace
}  // namespace sluice::gpu
