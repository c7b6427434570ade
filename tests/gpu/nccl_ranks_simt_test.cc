// NcclCommunicator with 2, 3 and 4 ranks on the SIMT build (suite gpu-simt): ranks are threads of
// this process, each on a device of its own, over the SIMT layer's in-process NCCL. Exact values
// (the layer reduces in rank order), the bucketed gradient all-reduce overlapping a simulated
// backward on the compute stream, and a failing rank that ends the others' collectives instead of
// hanging them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <cuda_runtime.h>

#include "assert_ok.h"
#include "comm/gradient_buckets.h"
#include "comm/launch_env.h"
#include "gpu/device.h"
#include "gpu/nccl_communicator.h"
#include "gpu/simt/simt.h"

namespace sluice::gpu {
namespace {

using ::testing::HasSubstr;

// --- kernels -----------------------------------------------------------------------------

// The gradient rank `rank` computes for element i of tensor `tensor` at step `step`.
__host__ __device__ float GradValue(int rank, int tensor, int i, int step) {
  return static_cast<float>(rank + 1) * static_cast<float>(1 + step) + 0.5f * tensor +
         0.25f * static_cast<float>(i % 5);
}

__global__ void FillGradKernel(float* g, int n, int rank, int tensor, int step) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) g[i] = GradValue(rank, tensor, i, step);
}

// The backward's compute between two tensors, without burning one of the machine's two cores.
__global__ void NapKernel(int microseconds) {
  std::this_thread::sleep_for(std::chrono::microseconds(microseconds));
}

// Holds the compute stream until *p == want: a bucket's all-reduce has already written the
// averaged value while the backward is still running. (A read racing the all-reduce's write, as a
// test of overlap must; atomic so that it is at least a well-defined read here.) The write is the
// SIMT NCCL's plain memcpy into device memory, as a real NCCL's is a DMA the kernel cannot order
// itself with: ThreadSanitizer rightly calls the pair a race (build-tsan/, docs/testing.md
// "ThreadSanitizer"), the one this observation is made of, so this probe alone is not
// instrumented; the all-reduce's and the consumers' own accesses still are. The load is the
// builtin in this function's own body: std::atomic_ref's load is a function of its own that GCC
// does not inline across the attribute, so it stayed instrumented.
#if defined(__SANITIZE_THREAD__)
__attribute__((no_sanitize("thread")))
#endif
__global__ void AwaitValueKernel(float* p, float want, std::atomic<bool>* timed_out) {
  const auto t0 = std::chrono::steady_clock::now();
  float seen;
  while ((__atomic_load(p, &seen, __ATOMIC_ACQUIRE), seen) != want) {
    if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(5)) {
      timed_out->store(true);
      return;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

// Half the block returns before the barrier the other half waits at: a device fault.
__global__ void DivergentBarrierKernel() {
  if (threadIdx.x < 32) return;
  __syncthreads();
}

// --- helpers -----------------------------------------------------------------------------

// NCCL's bootstrap through NCCL_COMM_ID, set here before any rank thread starts: every rank
// thread derives the same id from it (gpu/simt/nccl_host.h).
class NcclRanksTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { setenv("NCCL_COMM_ID", "127.0.0.1:29511", 1); }
  static void TearDownTestSuite() { unsetenv("NCCL_COMM_ID"); }
};

// Runs body(rank, env) on `world` threads; rank r gets LOCAL_RANK first_device + r, so the
// communicator puts it on that device.
void RunRanks(int world, int first_device,
              const std::function<void(int, const comm::LaunchEnv&)>& body) {
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      comm::LaunchEnv env;
      env.rank = r;
      env.world = world;
      env.local_rank = first_device + r;
      ASSERT_EQ(cudaSetDevice(env.local_rank), cudaSuccess);
      body(r, env);
    });
  }
  for (std::thread& t : threads) t.join();
}

// The mean the communicator must give: the sum in rank order, divided by the rank count.
float Mean(int world, const std::function<float(int)>& value) {
  float sum = 0;
  for (int r = 0; r < world; ++r) sum += value(r);
  return sum / static_cast<float>(world);
}

// --- tests -------------------------------------------------------------------------------

TEST_F(NcclRanksTest, CollectivesGiveExactValuesOnTwoToFourRanks) {
  for (int world : {2, 3, 4}) {
    std::atomic<bool> rank0_at_barrier{false};
    RunRanks(world, 0, [&](int rank, const comm::LaunchEnv& env) {
      std::unique_ptr<NcclCommunicator> comm;
      ASSERT_OK(NcclCommunicator::Create(env, NcclOptions(), &comm));
      EXPECT_EQ(comm->world(), world);
      EXPECT_EQ(comm->device(), rank);

      const size_t n = 1000;
      auto value = [](int r, size_t i) {
        return 0.25f * static_cast<float>((r + 1) * (i % 9)) - r;
      };
      std::vector<float> host(n);
      for (size_t i = 0; i < n; ++i) host[i] = value(rank, i);
      std::unique_ptr<DeviceBuffer> dev;
      ASSERT_OK(DeviceBuffer::Allocate(n * sizeof(float), &dev));
      float* d = static_cast<float*>(dev->data());
      ASSERT_OK(CopyHostToDevice(d, host.data(), n * sizeof(float), comm->stream()));
      ASSERT_OK(comm->AllReduceAverage(d, n));
      std::vector<float> got(n);
      ASSERT_OK(CopyDeviceToHost(got.data(), d, n * sizeof(float), comm->stream()));
      size_t wrong = 0;
      for (size_t i = 0; i < n; ++i) {
        wrong += got[i] != Mean(world, [&](int r) { return value(r, i); });
      }
      EXPECT_EQ(wrong, 0u) << "rank " << rank << " of " << world;

      // Broadcast from the last rank.
      std::vector<float> mine(n, static_cast<float>(rank) + 0.5f);
      ASSERT_OK(CopyHostToDevice(d, mine.data(), n * sizeof(float), comm->stream()));
      ASSERT_OK(comm->Broadcast(d, n * sizeof(float), world - 1));
      ASSERT_OK(CopyDeviceToHost(got.data(), d, n * sizeof(float), comm->stream()));
      EXPECT_EQ(got, std::vector<float>(n, static_cast<float>(world - 1) + 0.5f));

      // Barrier returns only once every rank has called it: rank 0 comes late.
      if (rank == 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        rank0_at_barrier = true;
      }
      ASSERT_OK(comm->Barrier());
      EXPECT_TRUE(rank0_at_barrier) << "rank " << rank << " left the barrier before rank 0 came";

      // Host memory, more than the communicator's 64-element scratch (two rounds).
      std::vector<int64_t> ints(70);
      for (size_t i = 0; i < ints.size(); ++i) {
        ints[i] = (i % 2 ? -1 : 1) * static_cast<int64_t>(rank * 1000 + i);
      }
      ASSERT_OK(comm->AllReduceMaxHost(ints.data(), ints.size()));
      for (size_t i = 0; i < ints.size(); ++i) {
        EXPECT_EQ(ints[i],
                  i % 2 ? -static_cast<int64_t>(i) : static_cast<int64_t>((world - 1) * 1000 + i))
            << i;
      }
      EXPECT_OK(comm::AgreeOnBatchCount(comm.get(), 42, "epoch 0"));
      const Status disagree = comm::AgreeOnBatchCount(comm.get(), 40 + rank, "epoch 1");
      EXPECT_THAT(disagree.message(), HasSubstr("ranks disagree on the batch count (40 to " +
                                                std::to_string(40 + world - 1)));
    });
  }
}

// The trainer's overlap: backward fills the gradients tensor by tensor on the compute stream,
// GradientBuckets hands each complete bucket to the lane, whose all-reduce runs on its own stream
// while backward goes on. The last tensor's backward waits (AwaitValueKernel) for bucket 0's
// average to appear: without overlap it never would. Every rank ends with the same averages,
// the exact mean in rank order. Two steps, so the lane's reused events are exercised.
TEST_F(NcclRanksTest, BucketedAllReduceOverlapsBackwardAndAgreesOnEveryRank) {
  constexpr int kTensors = 6;
  constexpr int kTensorSize = 1000;
  constexpr size_t kBucket = 1500;  // bucket 0 is complete after tensor 1
  constexpr size_t kCount = kTensors * kTensorSize;
  constexpr int kSteps = 2;
  for (int world : {2, 3, 4}) {
    std::vector<std::vector<float>> results(world);
    std::atomic<bool> timed_out{false};
    RunRanks(world, 0, [&](int rank, const comm::LaunchEnv& env) {
      cudaStream_t compute = nullptr;
      ASSERT_EQ(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking), cudaSuccess);
      {
        NcclOptions options;
        options.stream = compute;  // the trainer's compute stream carries the collectives
        std::unique_ptr<NcclCommunicator> comm;
        ASSERT_OK(NcclCommunicator::Create(env, options, &comm));
        std::unique_ptr<DeviceBuffer> grads;
        ASSERT_OK(DeviceBuffer::Allocate(kCount * sizeof(float), &grads));
        float* g = static_cast<float*>(grads->data());
        std::unique_ptr<comm::ReduceLane> lane;
        ASSERT_OK(comm->MakeLane(&lane));
        comm::GradientBuckets buckets(g, kCount, kBucket, lane.get());
        for (int step = 0; step < kSteps; ++step) {
          const float bucket0_mean = Mean(world, [&](int r) { return GradValue(r, 0, 0, step); });
          for (int t = 0; t < kTensors; ++t) {
            SLUICE_LAUNCH(NapKernel, 1, 1, 0, compute)(1000);
            if (t == kTensors - 1) {
              SLUICE_LAUNCH(AwaitValueKernel, 1, 1, 0, compute)(g, bucket0_mean, &timed_out);
            }
            SLUICE_LAUNCH(FillGradKernel, (kTensorSize + 255) / 256, 256, 0, compute)
            (g + t * kTensorSize, kTensorSize, rank, t, step);
            ASSERT_EQ(cudaGetLastError(), cudaSuccess);
            ASSERT_OK(buckets.MarkReady(static_cast<size_t>(t) * kTensorSize, kTensorSize));
          }
          EXPECT_EQ(buckets.submitted(), (std::vector<uint32_t>{0, 1, 2, 3}));
          ASSERT_OK(buckets.Finish());
          std::vector<float> got(kCount);
          // Staged from pageable memory: waits for the compute stream, which waits for the lane.
          ASSERT_OK(CopyDeviceToHost(got.data(), g, kCount * sizeof(float), compute));
          size_t wrong = 0;
          for (size_t e = 0; e < kCount; ++e) {
            const int t = static_cast<int>(e / kTensorSize);
            const int i = static_cast<int>(e % kTensorSize);
            wrong += got[e] != Mean(world, [&](int r) { return GradValue(r, t, i, step); });
          }
          EXPECT_EQ(wrong, 0u) << "rank " << rank << " of " << world << ", step " << step;
          results[rank] = got;
        }
      }
      EXPECT_EQ(cudaStreamDestroy(compute), cudaSuccess);
    });
    EXPECT_FALSE(timed_out) << world << " ranks: bucket 0 was not averaged while backward ran";
    for (int r = 1; r < world; ++r) EXPECT_EQ(results[r], results[0]) << "rank " << r;
  }
}

// Rank 1's device faults; its communicator is then closed the way NcclCommunicator closes one
// after an error (ncclCommAbort). The other ranks, waiting in a Barrier that rank 1 never joins,
// get an error at once instead of hanging, and stderr says why. On devices 10 to 12: a fault
// spoils its device for the rest of the process.
TEST_F(NcclRanksTest, AFailingRankEndsTheOthersCollectivesInsteadOfHangingThem) {
  const auto t0 = std::chrono::steady_clock::now();
  ::testing::internal::CaptureStderr();
  std::vector<Status> barrier(3);
  RunRanks(3, 10, [&](int rank, const comm::LaunchEnv& env) {
    std::unique_ptr<NcclCommunicator> comm;
    ASSERT_OK(NcclCommunicator::Create(env, NcclOptions(), &comm));
    std::unique_ptr<DeviceBuffer> dev;
    ASSERT_OK(DeviceBuffer::Allocate(4 * sizeof(float), &dev));
    ASSERT_OK(comm->AllReduceAverage(static_cast<float*>(dev->data()), 4));
    ASSERT_OK(comm->Barrier());
    if (rank == 1) {
      SLUICE_LAUNCH(DivergentBarrierKernel, 1, 64, 0, static_cast<cudaStream_t>(comm->stream()))();
    }
    barrier[rank] = comm->Barrier();
    dev.reset();
    comm.reset();  // rank 1: its stream failed, so the communicator is aborted
  });
  const std::string log = ::testing::internal::GetCapturedStderr();
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (int r = 0; r < 3; ++r) {
    EXPECT_THAT(barrier[r].message(), HasSubstr("unspecified launch failure")) << "rank " << r;
  }
  EXPECT_THAT(log, HasSubstr("kernel DivergentBarrierKernel"));
  EXPECT_THAT(log, HasSubstr("rank 0 of 3: rank 1 called ncclCommAbort"));
  EXPECT_THAT(log, HasSubstr("rank 2 of 3: rank 1 called ncclCommAbort"));
  EXPECT_LT(took, 20.0) << "the others waited for the 120 s timeout, not for the abort";
}

}  // namespace
}  // namespace sluice::gpu
