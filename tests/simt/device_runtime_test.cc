// The SIMT layer's CPU device backend (gpu/simt/cuda_runtime_host.h) through the CUDA runtime
// API itself: streams overlap and keep their order, events order work across streams, and errors
// come back as the CUDA path reports them. Bounds on wall time are generous: the machine is shared.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "gpu/simt/cuda_runtime_host.h"
#include "gpu/simt/simt.h"

namespace {

using ::testing::HasSubstr;

__global__ void SpinKernel(uint64_t ns) {
  const uint64_t start = sluice::simt::GlobalTimerNs();
  while (sluice::simt::GlobalTimerNs() - start < ns) {
  }
}

// v = 3v + k: applying two of these in the wrong order gives a different result.
__global__ void StepKernel(int* v, int n, int k) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) v[i] = v[i] * 3 + k;
}

__global__ void StoreKernel(int* dst, const int* src) { *dst = *src; }

__global__ void EarlyReturnKernel() {
  if (threadIdx.x == 0) return;
  __syncthreads();
}

constexpr uint64_t kMs = 1000000;

// Waits until *open is set, or 10 s pass (then *timed_out).
__device__ void WaitFor(const std::atomic<bool>* open, std::atomic<bool>* timed_out) {
  const auto t0 = std::chrono::steady_clock::now();
  while (!open->load()) {
    if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(10)) {
      timed_out->store(true);
      return;
    }
    std::this_thread::yield();
  }
}

// Holds its stream until *open is set: the tests below check stream order by cause and effect,
// not by the clock of a shared 2-core machine.
__global__ void GateKernel(const std::atomic<bool>* open, std::atomic<bool>* timed_out) {
  WaitFor(open, timed_out);
}

// Sets *mine, then waits for *other: two of these finish only if their streams run at once.
__global__ void MeetKernel(std::atomic<bool>* mine, const std::atomic<bool>* other,
                           std::atomic<bool>* timed_out) {
  mine->store(true);
  WaitFor(other, timed_out);
}

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

class DeviceRuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cudaStreamCreateWithFlags(&a_, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaStreamCreateWithFlags(&b_, cudaStreamNonBlocking), cudaSuccess);
  }
  void TearDown() override {
    EXPECT_EQ(cudaStreamDestroy(a_), cudaSuccess);
    EXPECT_EQ(cudaStreamDestroy(b_), cudaSuccess);
    EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "a test left an error behind";
  }
  cudaStream_t a_ = nullptr;
  cudaStream_t b_ = nullptr;
};

TEST_F(DeviceRuntimeTest, KernelsOnTwoStreamsOverlap) {
  std::atomic<bool> on_a{false}, on_b{false}, timed_out{false};
  SLUICE_LAUNCH(MeetKernel, 1, 1, 0, a_)(&on_a, &on_b, &timed_out);
  SLUICE_LAUNCH(MeetKernel, 1, 1, 0, b_)(&on_b, &on_a, &timed_out);
  ASSERT_EQ(cudaStreamSynchronize(a_), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(b_), cudaSuccess);
  EXPECT_TRUE(on_a && on_b);
  EXPECT_FALSE(timed_out) << "the grids on two streams ran one after the other";
}

TEST_F(DeviceRuntimeTest, AStreamRunsCopiesAndKernelsInOrder) {
  const int n = 1000;
  int* host = nullptr;
  int* dev = nullptr;
  ASSERT_EQ(cudaHostAlloc(reinterpret_cast<void**>(&host), n * sizeof(int), cudaHostAllocPortable),
            cudaSuccess);
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dev), n * sizeof(int)), cudaSuccess);
  for (int i = 0; i < n; ++i) host[i] = i;
  ASSERT_EQ(cudaMemsetAsync(dev, 0xff, n * sizeof(int), a_), cudaSuccess);
  // A slow first grid: work queued behind it must wait for it, not overtake it.
  SLUICE_LAUNCH(SpinKernel, 1, 1, 0, a_)(20 * kMs);
  ASSERT_EQ(cudaMemcpyAsync(dev, host, n * sizeof(int), cudaMemcpyHostToDevice, a_), cudaSuccess);
  for (int k = 1; k <= 5; ++k) SLUICE_LAUNCH(StepKernel, (n + 127) / 128, 128, 0, a_)(dev, n, k);
  ASSERT_EQ(cudaMemcpyAsync(host, dev, n * sizeof(int), cudaMemcpyDeviceToHost, a_), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(a_), cudaSuccess);
  int wrong = 0;
  for (int i = 0; i < n; ++i) {
    int want = i;
    for (int k = 1; k <= 5; ++k) want = want * 3 + k;
    wrong += host[i] != want;
  }
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(cudaFree(dev), cudaSuccess);
  EXPECT_EQ(cudaFreeHost(host), cudaSuccess);
}

TEST_F(DeviceRuntimeTest, AStreamWaitsForAnEventOfAnother) {
  int* dev = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dev), 2 * sizeof(int)), cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(dev, 0, 2 * sizeof(int), nullptr), cudaSuccess);
  cudaEvent_t before, after;
  ASSERT_EQ(cudaEventCreateWithFlags(&before, cudaEventDefault), cudaSuccess);
  ASSERT_EQ(cudaEventCreateWithFlags(&after, cudaEventBlockingSync), cudaSuccess);
  // Pinned, so the copy is queued on a behind the gate rather than staged by the caller.
  int* one = nullptr;
  ASSERT_EQ(cudaMallocHost(reinterpret_cast<void**>(&one), sizeof(int)), cudaSuccess);
  *one = 1;
  std::atomic<bool> open{false}, timed_out{false};
  ASSERT_EQ(cudaEventRecord(before, a_), cudaSuccess);
  SLUICE_LAUNCH(GateKernel, 1, 1, 0, a_)(&open, &timed_out);
  ASSERT_EQ(cudaMemcpyAsync(dev, one, sizeof(int), cudaMemcpyHostToDevice, a_), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(after, a_), cudaSuccess);
  // Stream b reads dev[0] only after a's copy: without the wait it would read 0.
  ASSERT_EQ(cudaStreamWaitEvent(b_, after, 0), cudaSuccess);
  SLUICE_LAUNCH(StoreKernel, 1, 1, 0, b_)(dev + 1, dev);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_EQ(cudaStreamQuery(b_), cudaErrorNotReady) << "b ran before a reached the event";
  open = true;
  ASSERT_EQ(cudaStreamSynchronize(b_), cudaSuccess);
  EXPECT_FALSE(timed_out);
  int got[2] = {0, 0};
  ASSERT_EQ(cudaMemcpy(got, dev, sizeof(got), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(got[1], 1);
  EXPECT_EQ(cudaEventQuery(after), cudaSuccess);
  float ms = 0;
  ASSERT_EQ(cudaEventElapsedTime(&ms, before, after), cudaSuccess);
  EXPECT_GT(ms, 0.0f);  // the gate held a for the 30 ms sleep, less when the worker started late
  EXPECT_LT(ms, 1000.0f);
  EXPECT_EQ(cudaEventDestroy(before), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(after), cudaSuccess);
  EXPECT_EQ(cudaFree(dev), cudaSuccess);
  EXPECT_EQ(cudaFreeHost(one), cudaSuccess);
}

TEST_F(DeviceRuntimeTest, AnEventIsNotReadyUntilItsStreamReachesIt) {
  cudaEvent_t e, untimed;
  ASSERT_EQ(cudaEventCreateWithFlags(&e, cudaEventDefault), cudaSuccess);
  ASSERT_EQ(cudaEventCreateWithFlags(&untimed, cudaEventDisableTiming), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(e), cudaSuccess) << "an event never recorded is complete";
  std::atomic<bool> open{false}, timed_out{false};
  SLUICE_LAUNCH(GateKernel, 1, 1, 0, a_)(&open, &timed_out);
  ASSERT_EQ(cudaEventRecord(e, a_), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(untimed, a_), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(e), cudaErrorNotReady);
  float ms = 0;
  EXPECT_EQ(cudaEventElapsedTime(&ms, e, e), cudaErrorNotReady);
  open = true;
  ASSERT_EQ(cudaEventSynchronize(e), cudaSuccess);
  EXPECT_FALSE(timed_out);
  EXPECT_EQ(cudaEventQuery(e), cudaSuccess);
  ASSERT_EQ(cudaEventSynchronize(untimed), cudaSuccess);
  EXPECT_EQ(cudaEventElapsedTime(&ms, e, untimed), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaEventDestroy(e), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(untimed), cudaSuccess);
}

TEST_F(DeviceRuntimeTest, AKernelErrorOnAStreamSurfacesAtTheNextSynchronize) {
  ::testing::internal::CaptureStderr();
  std::atomic<bool> open{false}, timed_out{false};
  SLUICE_LAUNCH(GateKernel, 1, 1, 0, a_)(&open, &timed_out);
  SLUICE_LAUNCH(EarlyReturnKernel, 1, 64, 0, a_)();
  const cudaError_t at_launch = cudaPeekAtLastError();
  open = true;
  const cudaError_t at_sync = cudaStreamSynchronize(a_);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(at_launch, cudaSuccess) << "the grid had not run yet";
  EXPECT_EQ(at_sync, cudaErrorLaunchFailure);
  EXPECT_STREQ(cudaGetErrorName(at_sync), "cudaErrorLaunchFailure");
  EXPECT_STREQ(cudaGetErrorString(at_sync), "unspecified launch failure");
  EXPECT_THAT(log, HasSubstr("kernel EarlyReturnKernel"));
  EXPECT_EQ(cudaGetLastError(), cudaErrorLaunchFailure) << "the synchronize's error is the last";
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "and taking it clears it";
  EXPECT_EQ(cudaStreamSynchronize(a_), cudaSuccess) << "reported once";
}

TEST_F(DeviceRuntimeTest, AKernelErrorIsAlsoTheNextLastError) {
  ::testing::internal::CaptureStderr();
  SLUICE_LAUNCH(EarlyReturnKernel, 1, 64, 0, b_)();
  while (cudaStreamQuery(b_) == cudaErrorNotReady) {
  }
  (void)::testing::internal::GetCapturedStderr();
  EXPECT_EQ(cudaGetLastError(), cudaErrorLaunchFailure);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST_F(DeviceRuntimeTest, ALaunchOnADestroyedStreamIsALaunchError) {
  cudaStream_t gone = nullptr;
  ASSERT_EQ(cudaStreamCreate(&gone), cudaSuccess);
  ASSERT_EQ(cudaStreamDestroy(gone), cudaSuccess);
  ::testing::internal::CaptureStderr();
  SLUICE_LAUNCH(SpinKernel, 1, 1, 0, gone)(uint64_t{0});
  EXPECT_THAT(::testing::internal::GetCapturedStderr(), HasSubstr("kernel SpinKernel"));
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaStreamDestroy(gone), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidResourceHandle);
}

TEST_F(DeviceRuntimeTest, BadPointersAreErrorsNamedAsCudaNamesThem) {
  char* dev = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dev), 64), cudaSuccess);
  std::vector<char> pageable(128);
  const cudaError_t overrun =
      cudaMemcpyAsync(dev + 32, pageable.data(), 64, cudaMemcpyHostToDevice, a_);
  EXPECT_EQ(overrun, cudaErrorInvalidValue) << "a copy past the end of a device allocation";
  EXPECT_STREQ(cudaGetErrorName(overrun), "cudaErrorInvalidValue");
  EXPECT_STREQ(cudaGetErrorString(overrun), "invalid argument");
  EXPECT_EQ(cudaMemcpyAsync(pageable.data(), dev, 8, cudaMemcpyHostToDevice, a_),
            cudaErrorInvalidValue)
      << "the kind says device destination; the pointer is host memory";
  EXPECT_EQ(cudaFree(pageable.data()), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFreeHost(dev), cudaErrorInvalidValue);
  EXPECT_EQ(cudaSetDevice(1), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidDevice) << "the last error is the latest";

  cudaPointerAttributes attr{};
  ASSERT_EQ(cudaPointerGetAttributes(&attr, dev + 10), cudaSuccess);
  EXPECT_EQ(attr.type, cudaMemoryTypeDevice);
  ASSERT_EQ(cudaPointerGetAttributes(&attr, pageable.data()), cudaSuccess);
  EXPECT_EQ(attr.type, cudaMemoryTypeUnregistered);
  void* pinned = nullptr;
  ASSERT_EQ(cudaHostAlloc(&pinned, 16, cudaHostAllocDefault), cudaSuccess);
  ASSERT_EQ(cudaPointerGetAttributes(&attr, pinned), cudaSuccess);
  EXPECT_EQ(attr.type, cudaMemoryTypeHost);
  EXPECT_EQ(cudaFreeHost(pinned), cudaSuccess);
  EXPECT_EQ(cudaFree(dev), cudaSuccess);
  EXPECT_EQ(cudaFree(dev), cudaErrorInvalidValue) << "a double free";
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
}

// A copy from pageable memory is staged, as CUDA does: it waits for the stream and the caller
// may reuse its buffer at once. From pinned memory it is queued and the call returns at once.
TEST_F(DeviceRuntimeTest, OnlyCopiesFromPinnedMemoryAreAsynchronous) {
  int* dev = nullptr;
  int* pinned = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dev), sizeof(int)), cudaSuccess);
  ASSERT_EQ(cudaMallocHost(reinterpret_cast<void**>(&pinned), sizeof(int)), cudaSuccess);
  *pinned = 7;
  *dev = 0;
  std::atomic<bool> open{false}, timed_out{false};
  SLUICE_LAUNCH(GateKernel, 1, 1, 0, a_)(&open, &timed_out);
  // Returns while the gate holds the stream (a staged copy would wait for it until the timeout).
  ASSERT_EQ(cudaMemcpyAsync(dev, pinned, sizeof(int), cudaMemcpyHostToDevice, a_), cudaSuccess);
  EXPECT_FALSE(timed_out);
  EXPECT_EQ(*dev, 0) << "queued behind the gate, not copied yet";  // device memory is host memory
  open = true;
  int pageable = 9;
  SLUICE_LAUNCH(SpinKernel, 1, 1, 0, a_)(40 * kMs);
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(cudaMemcpyAsync(dev, &pageable, sizeof(int), cudaMemcpyHostToDevice, a_), cudaSuccess);
  EXPECT_GE(SecondsSince(t0), 0.035);
  pageable = 0;  // already copied
  ASSERT_EQ(cudaMemcpyAsync(pinned, dev, sizeof(int), cudaMemcpyDeviceToHost, a_), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(a_), cudaSuccess);
  EXPECT_EQ(*pinned, 9);
  EXPECT_EQ(cudaFree(dev), cudaSuccess);
  EXPECT_EQ(cudaFreeHost(pinned), cudaSuccess);
}

TEST(DeviceRuntime, OneDeviceDescribedAsTheSimtDevice) {
  int n = 0;
  ASSERT_EQ(cudaGetDeviceCount(&n), cudaSuccess);
  EXPECT_EQ(n, 1);
  cudaDeviceProp prop{};
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
  EXPECT_THAT(prop.name, HasSubstr("SIMT"));
  EXPECT_GT(prop.totalGlobalMem, size_t{0});
  EXPECT_EQ(cudaGetDeviceProperties(&prop, 1), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaStreamSynchronize(reinterpret_cast<cudaStream_t>(&n)),
            cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidResourceHandle);
}

}  // namespace
