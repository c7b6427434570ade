// gpu/kernels.cu compiled by the host compiler through the SIMT shim: the same source nvcc
// builds, run on the CPU. Including the .cu (rather than linking gpu/) also reaches the kernels
// in its anonymous namespace.
#include <gtest/gtest.h>

#include <chrono>

#include "gpu/kernels.cu"

namespace sluice::gpu {
namespace {

double SecondsOf(double request) {
  const auto start = std::chrono::steady_clock::now();
  const Status s = SpinOnStream(nullptr, request);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// SpinKernel against the plain loop it stands for: busy-wait at least the requested time, and
// not much more.
TEST(FeedKernels, SpinOnStreamWaitsTheRequestedTime) {
  for (double request : {0.0, 0.002, 0.02}) {
    const double took = SecondsOf(request);
    EXPECT_GE(took, request) << request;
    EXPECT_LT(took, request + 0.5) << request;
  }
  EXPECT_LT(SecondsOf(-1.0), 0.5) << "a negative time spins zero";
}

TEST(FeedKernels, SpinKernelThroughTheLaunchHelper) {
  const uint64_t start = simt::GlobalTimerNs();
  SLUICE_LAUNCH(SpinKernel, 2, 3, 0, nullptr)(uint64_t{1000000});  // 6 threads of 1 ms each
  ASSERT_TRUE(simt::TakeLastError().ok());
  EXPECT_GE(simt::GlobalTimerNs() - start, uint64_t{6000000});
}

}  // namespace
}  // namespace sluice::gpu
