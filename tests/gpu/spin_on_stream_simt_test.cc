// SpinOnStream on the SIMT build of gpu/ (suite gpu-simt): its error is the launch's own or the
// device's, read from the CUDA runtime as on a GPU, never the SIMT layer's per-thread error of
// some other launch.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include "assert_ok.h"
#include "gpu/kernels.h"
#include "gpu/simt/simt.h"

namespace sluice::gpu {
namespace {

using ::testing::HasSubstr;

// Half the block returns before the barrier the other half waits at: a device fault.
__global__ void DivergentBarrierKernel() {
  if (threadIdx.x < 32) return;
  __syncthreads();
}

TEST(SpinOnStreamSimt, ALaunchOnADestroyedStreamIsItsError) {
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  ASSERT_OK(SpinOnStream(s, 1e-4));
  ASSERT_EQ(cudaStreamDestroy(s), cudaSuccess);
  ::testing::internal::CaptureStderr();
  const Status st = SpinOnStream(s, 1e-4);
  (void)::testing::internal::GetCapturedStderr();
  EXPECT_THAT(st.message(), HasSubstr("invalid resource handle"));
}

// CUDA's sticky launch failure: once a grid failed on the device, the next launch says so. On a
// device of its own (7): the failure lasts for the process.
TEST(SpinOnStreamSimt, ADeviceFaultIsTheErrorOfLaterLaunches) {
  ASSERT_EQ(cudaSetDevice(7), cudaSuccess);
  // Back to device 0 however the test ends: every later test of the process runs on the current
  // device, and device 7 stays faulted.
  struct DeviceZeroAtExit {
    ~DeviceZeroAtExit() {
      (void)cudaSetDevice(0);
      (void)cudaGetLastError();
    }
  } device_zero_at_exit;
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  ::testing::internal::CaptureStderr();
  SLUICE_LAUNCH(DivergentBarrierKernel, 1, 64, 0, s)();
  // The launch is asynchronous: whether the stream's worker has run the faulting grid by the next
  // launch is up to the scheduler (ThreadSanitizer's slowdown found both orders), and CUDA allows
  // either: the next launch succeeds or already reports the fault. Only the synchronised state is
  // fixed.
  const Status racing = SpinOnStream(s, 1e-4);
  if (!racing.ok()) {
    EXPECT_THAT(racing.message(), HasSubstr("unspecified launch failure"));
  }
  EXPECT_EQ(cudaStreamSynchronize(s), cudaErrorLaunchFailure);
  const Status st = SpinOnStream(s, 1e-4);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(), HasSubstr("kernel DivergentBarrierKernel"));
  EXPECT_THAT(st.message(), HasSubstr("unspecified launch failure"));
  EXPECT_EQ(cudaStreamDestroy(s), cudaErrorLaunchFailure);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
}

}  // namespace
}  // namespace sluice::gpu
