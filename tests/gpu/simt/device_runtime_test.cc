// The SIMT layer's CPU device backend (gpu/simt/cuda_runtime_host.h) through the CUDA runtime
// API itself: streams overlap and keep their order, events order work across streams, the legacy
// stream and the frees synchronise as CUDA's do, and errors come back as the CUDA path reports
// them. Bounds on wall time are generous: the machine is shared. A test that makes a kernel fail
// does it on a device of its own (FreshDevice): the failure is sticky, as in CUDA.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "gpu/simt/cuda_runtime_host.h"
#include "gpu/simt/simt.h"

namespace {

using ::testing::AllOf;
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

// Sets *done after the store: cause and effect for "the kernel ran before X returned".
__global__ void StoreThenMarkKernel(int* dst, int value, std::atomic<bool>* done) {
  *dst = value;
  done->store(true);
}

// Uses its dynamic shared memory, all of it.
__global__ void SharedKernel(int* out) {
  SLUICE_DYNAMIC_SHARED(char, buf);
  buf[48 * 1024 - 1] = 3;
  *out = buf[48 * 1024 - 1];
}

// Opens *open after `ms` on a thread of its own; joins it on destruction.
class OpenLater {
 public:
  OpenLater(std::atomic<bool>* open, int ms)
      : t_([open, ms] {
          std::this_thread::sleep_for(std::chrono::milliseconds(ms));
          open->store(true);
        }) {}
  ~OpenLater() { t_.join(); }

 private:
  std::thread t_;
};

// A device no other test of this process has used: devices 1 to kDeviceCount - 1, one per call.
int FreshDevice() {
  static int next = 1;
  EXPECT_LT(next, sluice::simt::kDeviceCount) << "more failing tests than devices";
  return next++;
}

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

class DeviceRuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
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

// CUDA's sticky launch failure: once a kernel failed, the device is unusable and every later
// call says so, cudaGetLastError included, however often it is taken.
TEST(DeviceRuntimeErrors, AKernelFailureIsStickyForItsDeviceOnly) {
  const int device = FreshDevice();
  ASSERT_EQ(cudaSetDevice(device), cudaSuccess);
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  int* dev = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dev), sizeof(int)), cudaSuccess);
  ASSERT_EQ(cudaMemset(dev, 0, sizeof(int)), cudaSuccess);
  cudaEvent_t after = nullptr;
  ASSERT_EQ(cudaEventCreate(&after), cudaSuccess);
  ::testing::internal::CaptureStderr();
  std::atomic<bool> open{false}, timed_out{false}, stored{false};
  SLUICE_LAUNCH(GateKernel, 1, 1, 0, s)(&open, &timed_out);
  SLUICE_LAUNCH(EarlyReturnKernel, 1, 64, 0, s)();
  SLUICE_LAUNCH(StoreThenMarkKernel, 1, 1, 0, s)(dev, 7, &stored);  // queued behind the fault
  ASSERT_EQ(cudaEventRecord(after, s), cudaSuccess);
  const cudaError_t at_launch = cudaPeekAtLastError();
  open = true;
  const cudaError_t at_sync = cudaStreamSynchronize(s);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(at_launch, cudaSuccess) << "the grid had not run yet";
  EXPECT_EQ(at_sync, cudaErrorLaunchFailure);
  EXPECT_STREQ(cudaGetErrorName(at_sync), "cudaErrorLaunchFailure");
  EXPECT_STREQ(cudaGetErrorString(at_sync), "unspecified launch failure");
  EXPECT_THAT(log, HasSubstr("kernel EarlyReturnKernel"));
  EXPECT_FALSE(stored) << "work queued after the fault is dropped";
  EXPECT_EQ(cudaEventSynchronize(after), cudaErrorLaunchFailure) << "and its events complete";
  EXPECT_EQ(cudaGetLastError(), cudaErrorLaunchFailure);
  EXPECT_EQ(cudaGetLastError(), cudaErrorLaunchFailure) << "taking it does not clear it";
  EXPECT_EQ(cudaStreamSynchronize(s), cudaErrorLaunchFailure);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorLaunchFailure);
  void* more = nullptr;
  EXPECT_EQ(cudaMalloc(&more, 16), cudaErrorLaunchFailure);
  EXPECT_EQ(cudaMemsetAsync(dev, 0, sizeof(int), s), cudaErrorLaunchFailure);
  int host = 0;
  EXPECT_EQ(cudaMemcpy(&host, dev, sizeof(int), cudaMemcpyDeviceToHost), cudaErrorLaunchFailure);
  SLUICE_LAUNCH(StoreThenMarkKernel, 1, 1, 0, nullptr)(dev, 8, &stored);
  EXPECT_FALSE(stored) << "nor does a later launch run";
  // Frees and destroys still release (no leak under ASan), and say what happened.
  EXPECT_EQ(cudaEventDestroy(after), cudaErrorLaunchFailure);
  EXPECT_EQ(cudaFree(dev), cudaErrorLaunchFailure);
  EXPECT_EQ(cudaStreamDestroy(s), cudaErrorLaunchFailure);
  EXPECT_FALSE(timed_out);

  // Device 0 goes on, for this thread too once it selects it.
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  EXPECT_EQ(cudaGetLastError(), cudaErrorLaunchFailure) << "the last call's error, now taken";
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&more, 16), cudaSuccess);
  EXPECT_EQ(cudaFree(more), cudaSuccess);
}

TEST(DeviceRuntimeErrors, AFailedKernelOnTheNullStreamIsStickyToo) {
  const int device = FreshDevice();
  std::thread([device] {
    ASSERT_EQ(cudaSetDevice(device), cudaSuccess);
    ::testing::internal::CaptureStderr();
    SLUICE_LAUNCH(EarlyReturnKernel, 1, 64, 0, nullptr)();
    EXPECT_THAT(::testing::internal::GetCapturedStderr(), HasSubstr("kernel EarlyReturnKernel"));
    EXPECT_EQ(cudaGetLastError(), cudaErrorLaunchFailure);
    EXPECT_EQ(cudaGetLastError(), cudaErrorLaunchFailure);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorLaunchFailure);
  }).join();
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "this thread's device (0) is fine";
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
  EXPECT_EQ(cudaSetDevice(sluice::simt::kDeviceCount), cudaErrorInvalidDevice);
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

TEST(DeviceRuntime, DevicesDescribedAsSimtDevicesAndSelectedPerThread) {
  int n = 0;
  ASSERT_EQ(cudaGetDeviceCount(&n), cudaSuccess);
  EXPECT_EQ(n, sluice::simt::kDeviceCount);
  cudaDeviceProp prop{};
  ASSERT_EQ(cudaGetDeviceProperties(&prop, n - 1), cudaSuccess);
  EXPECT_THAT(prop.name, HasSubstr("SIMT"));
  EXPECT_GT(prop.totalGlobalMem, size_t{0});
  std::thread([] {
    EXPECT_EQ(cudaSetDevice(3), cudaSuccess);
    int d = -1;
    EXPECT_EQ(cudaGetDevice(&d), cudaSuccess);
    EXPECT_EQ(d, 3);
  }).join();
  int d = -1;
  EXPECT_EQ(cudaGetDevice(&d), cudaSuccess);
  EXPECT_EQ(d, 0) << "another thread's cudaSetDevice";
  EXPECT_EQ(cudaGetDeviceProperties(&prop, n), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaStreamSynchronize(reinterpret_cast<cudaStream_t>(&n)),
            cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidResourceHandle);
}

// CUDA's legacy stream synchronises with blocking streams only: a synchronous copy, a memset, a
// null-stream kernel or cudaStreamSynchronize(0) must not wait for a cudaStreamNonBlocking
// stream, or the layer would hide the races a GPU shows.
TEST_F(DeviceRuntimeTest, TheLegacyStreamDoesNotWaitForNonBlockingStreams) {
  int* dev = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dev), sizeof(int)), cudaSuccess);
  std::atomic<bool> open{false}, timed_out{false}, stored{false};
  SLUICE_LAUNCH(GateKernel, 1, 1, 0, a_)(&open, &timed_out);  // a_ is non-blocking
  ASSERT_EQ(cudaMemset(dev, 0, sizeof(int)), cudaSuccess);
  int host = -1;
  ASSERT_EQ(cudaMemcpy(&host, dev, sizeof(int), cudaMemcpyDeviceToHost), cudaSuccess);
  SLUICE_LAUNCH(StoreThenMarkKernel, 1, 1, 0, nullptr)(dev, 5, &stored);
  ASSERT_EQ(cudaStreamSynchronize(nullptr), cudaSuccess);
  EXPECT_TRUE(stored);
  EXPECT_EQ(host, 0);
  EXPECT_EQ(cudaStreamQuery(a_), cudaErrorNotReady) << "the gate still holds a";
  open = true;
  ASSERT_EQ(cudaStreamSynchronize(a_), cudaSuccess);
  EXPECT_FALSE(timed_out) << "the legacy stream waited for a non-blocking stream";
  EXPECT_EQ(cudaFree(dev), cudaSuccess);
}

// ...and it does wait for blocking streams (cudaStreamCreate): work queued there first is done
// before a synchronous copy or a null-stream kernel runs.
TEST_F(DeviceRuntimeTest, TheLegacyStreamWaitsForBlockingStreams) {
  cudaStream_t blocking = nullptr;
  ASSERT_EQ(cudaStreamCreate(&blocking), cudaSuccess);
  int* dev = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dev), 2 * sizeof(int)), cudaSuccess);
  ASSERT_EQ(cudaMemset(dev, 0, 2 * sizeof(int)), cudaSuccess);
  std::atomic<bool> open{false}, timed_out{false}, stored{false};
  {
    OpenLater opener(&open, 20);
    SLUICE_LAUNCH(GateKernel, 1, 1, 0, blocking)(&open, &timed_out);
    SLUICE_LAUNCH(StoreThenMarkKernel, 1, 1, 0, blocking)(dev, 9, &stored);
    int host = 0;
    ASSERT_EQ(cudaMemcpy(&host, dev, sizeof(int), cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(host, 9) << "the copy overtook the blocking stream's kernel";
  }
  std::atomic<bool> open2{false}, stored2{false};
  {
    OpenLater opener(&open2, 20);
    SLUICE_LAUNCH(GateKernel, 1, 1, 0, blocking)(&open2, &timed_out);
    SLUICE_LAUNCH(StoreThenMarkKernel, 1, 1, 0, blocking)(dev, 11, &stored2);
    SLUICE_LAUNCH(StoreKernel, 1, 1, 0, nullptr)(dev + 1, dev);
    EXPECT_TRUE(stored2) << "the null-stream kernel overtook the blocking stream's";
  }
  int got[2] = {0, 0};
  ASSERT_EQ(cudaMemcpy(got, dev, sizeof(got), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(got[1], 11);
  EXPECT_FALSE(timed_out);
  EXPECT_EQ(cudaFree(dev), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(blocking), cudaSuccess);
}

// cudaFree and cudaFreeHost synchronise, as CUDA's do: a kernel or copy still queued on a stream
// (non-blocking included) that uses the memory runs before the memory goes.
TEST_F(DeviceRuntimeTest, FreesWaitForTheWorkStillQueued) {
  int* dev = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dev), sizeof(int)), cudaSuccess);
  std::atomic<bool> open{false}, timed_out{false}, stored{false};
  {
    OpenLater opener(&open, 20);
    SLUICE_LAUNCH(GateKernel, 1, 1, 0, a_)(&open, &timed_out);
    SLUICE_LAUNCH(StoreThenMarkKernel, 1, 1, 0, a_)(dev, 1, &stored);
    EXPECT_EQ(cudaFree(dev), cudaSuccess);
    EXPECT_TRUE(stored) << "cudaFree returned before a kernel that writes the memory ran";
  }
  int* pinned = nullptr;
  ASSERT_EQ(cudaMallocHost(reinterpret_cast<void**>(&pinned), sizeof(int)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dev), sizeof(int)), cudaSuccess);
  ASSERT_EQ(cudaMemset(dev, 0, sizeof(int)), cudaSuccess);
  std::atomic<bool> open2{false}, stored2{false};
  {
    OpenLater opener(&open2, 20);
    SLUICE_LAUNCH(GateKernel, 1, 1, 0, b_)(&open2, &timed_out);
    ASSERT_EQ(cudaMemcpyAsync(pinned, dev, sizeof(int), cudaMemcpyDeviceToHost, b_), cudaSuccess);
    SLUICE_LAUNCH(StoreThenMarkKernel, 1, 1, 0, b_)(dev, 2, &stored2);
    EXPECT_EQ(cudaFreeHost(pinned), cudaSuccess);
    EXPECT_TRUE(stored2) << "cudaFreeHost returned before a copy into the buffer ran";
  }
  EXPECT_EQ(cudaFree(dev), cudaSuccess);
  EXPECT_FALSE(timed_out);
}

// One thread destroys a stream while another waits for it: the waiter returns once the work is
// done, and nothing touches freed memory (the ASan build checks).
TEST(DeviceRuntime, DestroyingAStreamWhileAnotherThreadSynchronizesIt) {
  for (int round = 0; round < 10; ++round) {
    cudaStream_t s = nullptr;
    ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    std::atomic<bool> open{false}, timed_out{false}, waiting{false};
    SLUICE_LAUNCH(GateKernel, 1, 1, 0, s)(&open, &timed_out);
    cudaError_t waited = cudaErrorNotReady;
    std::thread waiter([&] {
      waiting = true;
      waited = cudaStreamSynchronize(s);
    });
    while (!waiting) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // into the wait, most rounds
    cudaError_t destroyed = cudaErrorNotReady;
    std::thread destroyer([&] { destroyed = cudaStreamDestroy(s); });
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    open = true;
    destroyer.join();
    waiter.join();
    EXPECT_EQ(destroyed, cudaSuccess);
    EXPECT_TRUE(waited == cudaSuccess || waited == cudaErrorInvalidResourceHandle)
        << cudaGetErrorName(waited) << ": success, or the stream was gone before the call";
    EXPECT_FALSE(timed_out);
  }
  // And with no work to hold either: the waiter asks again and again while the stream goes.
  for (int round = 0; round < 100; ++round) {
    cudaStream_t s = nullptr;
    ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    std::atomic<bool> started{false};
    std::thread waiter([&] {
      started = true;
      while (cudaStreamSynchronize(s) == cudaSuccess) {
      }
    });
    while (!started) std::this_thread::yield();
    EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
    waiter.join();
    EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  }
}

// SLUICE_SIMT_ORDER is read by the launching thread; a malformed value is the launch's error on
// a stream too (the worker thread, which runs the grid, would not see it).
TEST_F(DeviceRuntimeTest, AMalformedOrderIsTheErrorOfStreamLaunchesToo) {
  int* dev = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dev), sizeof(int)), cudaSuccess);
  ASSERT_EQ(cudaMemset(dev, 0, sizeof(int)), cudaSuccess);
  ASSERT_EQ(setenv("SLUICE_SIMT_ORDER", "sideways", 1), 0);
  std::atomic<bool> stored{false};
  cudaError_t on_stream = cudaSuccess, on_null = cudaSuccess;
  std::string log;
  cudaStream_t a = a_;
  std::thread([&] {  // a thread of its own reads the variable afresh
    ::testing::internal::CaptureStderr();
    SLUICE_LAUNCH(StoreThenMarkKernel, 1, 1, 0, a)(dev, 1, &stored);
    on_stream = cudaGetLastError();
    SLUICE_LAUNCH(StoreThenMarkKernel, 1, 1, 0, nullptr)(dev, 2, &stored);
    on_null = cudaGetLastError();
    log = ::testing::internal::GetCapturedStderr();
  }).join();
  ASSERT_EQ(unsetenv("SLUICE_SIMT_ORDER"), 0);
  ASSERT_EQ(cudaStreamSynchronize(a_), cudaSuccess);
  EXPECT_EQ(on_stream, cudaErrorInvalidConfiguration);
  EXPECT_EQ(on_null, cudaErrorInvalidConfiguration);
  EXPECT_THAT(log, AllOf(HasSubstr("kernel StoreThenMarkKernel"),
                         HasSubstr("SLUICE_SIMT_ORDER=sideways")));
  EXPECT_FALSE(stored) << "a refused launch does not run";
  EXPECT_EQ(cudaFree(dev), cudaSuccess);
}

// More than 48 KiB of dynamic shared memory is refused at the launch (cudaErrorInvalidValue, as
// CUDA without cudaFuncSetAttribute), not queued, and leaves the device usable.
TEST_F(DeviceRuntimeTest, DynamicSharedMemoryOver48KiBIsRefusedAtTheLaunch) {
  int* out = nullptr;
  ASSERT_EQ(cudaMallocHost(reinterpret_cast<void**>(&out), sizeof(int)), cudaSuccess);
  *out = 0;
  ::testing::internal::CaptureStderr();
  SLUICE_LAUNCH(SharedKernel, 1, 1, 48 * 1024 + 1, a_)(out);
  const cudaError_t refused = cudaGetLastError();
  EXPECT_THAT(::testing::internal::GetCapturedStderr(),
              AllOf(HasSubstr("kernel SharedKernel"), HasSubstr("49153 bytes of dynamic shared")));
  EXPECT_EQ(refused, cudaErrorInvalidValue);
  ASSERT_EQ(cudaStreamSynchronize(a_), cudaSuccess) << "a refusal does not spoil the device";
  EXPECT_EQ(*out, 0);
  SLUICE_LAUNCH(SharedKernel, 1, 1, 48 * 1024, a_)(out);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(a_), cudaSuccess);
  EXPECT_EQ(*out, 3);
  EXPECT_EQ(cudaFreeHost(out), cudaSuccess);
}

// A host function that calls the CUDA API (CUDA forbids it) gets cudaErrorNotPermitted, not a
// deadlock: a synchronous copy from the worker of a blocking stream would wait for that stream.
struct HostFnCalls {
  int* dev;
  cudaError_t copy = cudaSuccess;
  cudaError_t sync = cudaSuccess;
};
void CallCudaFromHostFn(void* p) {
  auto* c = static_cast<HostFnCalls*>(p);
  int host = 0;
  c->copy = cudaMemcpy(&host, c->dev, sizeof(int), cudaMemcpyDeviceToHost);
  c->sync = cudaDeviceSynchronize();
}

TEST(DeviceRuntime, CudaCallsFromAHostFunctionAreRefusedNotDeadlocked) {
  cudaStream_t blocking = nullptr;
  ASSERT_EQ(cudaStreamCreate(&blocking), cudaSuccess);
  HostFnCalls calls;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&calls.dev), sizeof(int)), cudaSuccess);
  ::testing::internal::CaptureStderr();
  ASSERT_EQ(cudaLaunchHostFunc(blocking, &CallCudaFromHostFn, &calls), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(blocking), cudaSuccess);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(), HasSubstr("does not permit"));
  EXPECT_EQ(calls.copy, cudaErrorNotPermitted);
  EXPECT_EQ(calls.sync, cudaErrorNotPermitted);
  EXPECT_STREQ(cudaGetErrorName(calls.copy), "cudaErrorNotPermitted");
  EXPECT_EQ(cudaFree(calls.dev), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(blocking), cudaSuccess);
}

}  // namespace
