// The SIMT layer's in-process NCCL (gpu/simt/nccl_host.h) through NCCL's own API: ranks are
// threads, each on a device of its own; collectives queued on streams meet across ranks; every
// way a collective can fail ends on every rank within a bound, with a message that says why.
// Tests whose collectives fail use devices no other test of this process uses (the failure is a
// sticky device fault, as an NCCL kernel that traps leaves it).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "gpu/simt/cuda_runtime_host.h"
#include "gpu/simt/nccl_host.h"

namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// Runs body(rank) on world threads, rank r on device devices[r], and joins them.
void RunRanks(const std::vector<int>& devices, const std::function<void(int)>& body) {
  std::vector<std::thread> threads;
  for (int r = 0; r < static_cast<int>(devices.size()); ++r) {
    threads.emplace_back([&, r] {
      ASSERT_EQ(cudaSetDevice(devices[r]), cudaSuccess);
      body(r);
    });
  }
  for (std::thread& t : threads) t.join();
}

ncclUniqueId FreshId() {
  ncclUniqueId id{};
  EXPECT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  return id;
}

// One rank: a communicator, a non-blocking stream and `bytes` of device memory.
struct Rank {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  void* dev = nullptr;

  void Init(int world, const ncclUniqueId& id, int rank, size_t bytes) {
    ASSERT_EQ(ncclCommInitRank(&comm, world, id, rank), ncclSuccess) << ncclGetLastError(nullptr);
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&dev, bytes), cudaSuccess);
  }
  // Releases everything; on a failed device the CUDA calls report the fault but still release.
  void Close(bool abort) {
    if (comm != nullptr) {
      EXPECT_EQ(abort ? ncclCommAbort(comm) : ncclCommDestroy(comm), ncclSuccess);
    }
    (void)cudaFree(dev);
    (void)cudaStreamDestroy(stream);
  }
};

template <typename T>
std::vector<T> Download(const void* dev, size_t n) {
  std::vector<T> out(n);
  EXPECT_EQ(cudaMemcpy(out.data(), dev, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
  return out;
}

TEST(NcclHost, IdsFromNcclCommIdAgreeAndFreshIdsDiffer) {
  const ncclUniqueId a = FreshId(), b = FreshId();
  EXPECT_NE(std::memcmp(&a, &b, sizeof(a)), 0);
  ASSERT_EQ(setenv("NCCL_COMM_ID", "10.0.0.1:29500", 1), 0);
  const ncclUniqueId c = FreshId(), d = FreshId();
  ASSERT_EQ(unsetenv("NCCL_COMM_ID"), 0);
  EXPECT_EQ(std::memcmp(&c, &d, sizeof(c)), 0) << "every rank builds the same id on its own";
  EXPECT_THAT(c.internal, HasSubstr("NCCL_COMM_ID=10.0.0.1:29500"));
}

// Reductions run in rank order in the element type, so the results are exact and the same on
// every rank; every type and operation NcclCommunicator could ask for.
TEST(NcclHost, AllReduceAndBroadcastGiveExactValuesOnEveryRank) {
  for (int world : {2, 3, 4}) {
    const ncclUniqueId id = FreshId();
    std::vector<int> devices;
    for (int r = 0; r < world; ++r) devices.push_back(r);
    RunRanks(devices, [&](int rank) {
      Rank me;
      me.Init(world, id, rank, 64);
      int count = 0, user_rank = -1, device = -1;
      EXPECT_EQ(ncclCommCount(me.comm, &count), ncclSuccess);
      EXPECT_EQ(ncclCommUserRank(me.comm, &user_rank), ncclSuccess);
      EXPECT_EQ(ncclCommCuDevice(me.comm, &device), ncclSuccess);
      EXPECT_EQ(count, world);
      EXPECT_EQ(user_rank, rank);
      EXPECT_EQ(device, rank);

      const float f[2] = {0.25f * static_cast<float>(rank + 1), -3.0f * static_cast<float>(rank)};
      ASSERT_EQ(cudaMemcpy(me.dev, f, sizeof(f), cudaMemcpyHostToDevice), cudaSuccess);
      ASSERT_EQ(ncclAllReduce(me.dev, me.dev, 2, ncclFloat32, ncclAvg, me.comm, me.stream),
                ncclSuccess);
      ASSERT_EQ(cudaStreamSynchronize(me.stream), cudaSuccess);
      float sum0 = 0, sum1 = 0;
      for (int r = 0; r < world; ++r) {
        sum0 += 0.25f * static_cast<float>(r + 1);
        sum1 += -3.0f * static_cast<float>(r);
      }
      EXPECT_EQ(Download<float>(me.dev, 2), (std::vector<float>{sum0 / static_cast<float>(world),
                                                                sum1 / static_cast<float>(world)}));

      const int64_t i64[2] = {rank * 10 - 7, -rank};
      ASSERT_EQ(cudaMemcpy(me.dev, i64, sizeof(i64), cudaMemcpyHostToDevice), cudaSuccess);
      ASSERT_EQ(ncclAllReduce(me.dev, me.dev, 2, ncclInt64, ncclMax, me.comm, me.stream),
                ncclSuccess);
      ASSERT_EQ(cudaStreamSynchronize(me.stream), cudaSuccess);
      EXPECT_EQ(Download<int64_t>(me.dev, 2), (std::vector<int64_t>{(world - 1) * 10 - 7, 0}));

      const int32_t i32[3] = {rank, 1, 2 * rank + 1};
      for (ncclRedOp_t op : {ncclSum, ncclProd, ncclMin, ncclAvg}) {
        ASSERT_EQ(cudaMemcpy(me.dev, i32, sizeof(i32), cudaMemcpyHostToDevice), cudaSuccess);
        ASSERT_EQ(ncclAllReduce(me.dev, me.dev, 3, ncclInt32, op, me.comm, me.stream), ncclSuccess);
        ASSERT_EQ(cudaStreamSynchronize(me.stream), cudaSuccess);
        const std::vector<int32_t> got = Download<int32_t>(me.dev, 3);
        const int32_t n = world;
        std::vector<int32_t> want;
        if (op == ncclSum) want = {n * (n - 1) / 2, n, n * n};
        if (op == ncclProd) want = {0, 1, n == 2 ? 3 : (n == 3 ? 15 : 105)};  // 1*3*5*7
        if (op == ncclMin) want = {0, 1, 1};
        if (op == ncclAvg) want = {(n - 1) / 2, 1, n};
        EXPECT_EQ(got, want) << "op " << op;
      }

      // Broadcast from the last rank, out of place; the others' sendbuff is never read.
      const double mine[2] = {1.5 * rank, -0.5};
      ASSERT_EQ(cudaMemcpy(me.dev, mine, sizeof(mine), cudaMemcpyHostToDevice), cudaSuccess);
      char* recv = static_cast<char*>(me.dev) + 32;
      ASSERT_EQ(ncclBroadcast(rank == world - 1 ? me.dev : nullptr, recv, 2, ncclFloat64, world - 1,
                              me.comm, me.stream),
                ncclSuccess);
      ASSERT_EQ(cudaStreamSynchronize(me.stream), cudaSuccess);
      EXPECT_EQ(Download<double>(recv, 2), (std::vector<double>{1.5 * (world - 1), -0.5}));
      me.Close(/*abort=*/false);
    });
  }
}

// A collective waits on its stream's worker for the other ranks: the host call returns at once,
// and a stream that reaches it first holds there until the others do.
TEST(NcclHost, ACollectiveIsQueuedAndWaitsForEveryRanksStream) {
  const ncclUniqueId id = FreshId();
  std::atomic<bool> late_rank_called{false};
  RunRanks({0, 1}, [&](int rank) {
    Rank me;
    me.Init(2, id, rank, 16);
    ASSERT_EQ(cudaMemset(me.dev, rank, 16), cudaSuccess);
    if (rank == 1) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (rank == 1) late_rank_called = true;
    ASSERT_EQ(ncclAllReduce(me.dev, me.dev, 16, ncclUint8, ncclMax, me.comm, me.stream),
              ncclSuccess);
    if (rank == 0) {
      EXPECT_EQ(cudaStreamQuery(me.stream), cudaErrorNotReady) << "rank 1 has not called yet";
    }
    ASSERT_EQ(cudaStreamSynchronize(me.stream), cudaSuccess);
    EXPECT_TRUE(late_rank_called);
    EXPECT_EQ(Download<uint8_t>(me.dev, 16), std::vector<uint8_t>(16, 1));
    me.Close(/*abort=*/false);
  });
}

TEST(NcclHost, SplitGroupsByColorAndOrdersByKey) {
  const ncclUniqueId id = FreshId();
  RunRanks({0, 1, 2, 3}, [&](int rank) {
    Rank me;
    me.Init(4, id, rank, 16);
    // Ranks 0 and 2 form color 0, ordered by key -rank: parent rank 2 becomes rank 0. Rank 3
    // takes no part (NCCL_SPLIT_NOCOLOR); rank 1 is alone in color 1.
    const int color = rank == 3 ? NCCL_SPLIT_NOCOLOR : rank % 2;
    ncclComm_t sub = nullptr;
    ASSERT_EQ(ncclCommSplit(me.comm, color, -rank, &sub, nullptr), ncclSuccess);
    if (rank == 3) {
      EXPECT_EQ(sub, nullptr);
    } else {
      ASSERT_NE(sub, nullptr);
      int count = 0, sub_rank = -1;
      EXPECT_EQ(ncclCommCount(sub, &count), ncclSuccess);
      EXPECT_EQ(ncclCommUserRank(sub, &sub_rank), ncclSuccess);
      EXPECT_EQ(count, rank == 1 ? 1 : 2);
      EXPECT_EQ(sub_rank, rank == 0 ? 1 : 0);  // color 0: parent 2 (key -2), then parent 0
      const int32_t v = rank + 1;
      ASSERT_EQ(cudaMemcpy(me.dev, &v, sizeof(v), cudaMemcpyHostToDevice), cudaSuccess);
      ASSERT_EQ(ncclAllReduce(me.dev, me.dev, 1, ncclInt32, ncclSum, sub, me.stream), ncclSuccess);
      ASSERT_EQ(cudaStreamSynchronize(me.stream), cudaSuccess);
      EXPECT_EQ(Download<int32_t>(me.dev, 1)[0], rank == 1 ? 2 : 1 + 3);
      EXPECT_EQ(ncclCommDestroy(sub), ncclSuccess);
    }
    me.Close(/*abort=*/false);
  });
}

TEST(NcclHost, BadCallsAreRefusedWithTheReason) {
  const ncclUniqueId id = FreshId();
  ncclComm_t comm = nullptr;
  EXPECT_EQ(ncclCommInitRank(&comm, 2, id, 2), ncclInvalidArgument);
  ncclUniqueId foreign{};
  std::strcpy(foreign.internal, "made elsewhere");
  EXPECT_EQ(ncclCommInitRank(&comm, 1, foreign, 0), ncclInvalidArgument);
  ASSERT_EQ(ncclCommInitRank(&comm, 1, id, 0), ncclSuccess);
  std::vector<float> host(4);
  void* dev = nullptr;
  ASSERT_EQ(cudaMalloc(&dev, 4 * sizeof(float)), cudaSuccess);
  EXPECT_EQ(ncclAllReduce(host.data(), dev, 4, ncclFloat32, ncclSum, comm, nullptr),
            ncclInvalidArgument);
  EXPECT_THAT(ncclGetLastError(nullptr), HasSubstr("sendbuff is not 16 bytes of device memory"));
  EXPECT_EQ(ncclAllReduce(dev, dev, 5, ncclFloat32, ncclSum, comm, nullptr), ncclInvalidArgument)
      << "one element past the allocation";
  EXPECT_EQ(ncclAllReduce(dev, dev, 4, ncclBfloat16, ncclSum, comm, nullptr), ncclInvalidArgument);
  EXPECT_EQ(ncclBroadcast(dev, dev, 4, ncclFloat32, 1, comm, nullptr), ncclInvalidArgument);
  EXPECT_STREQ(ncclGetErrorString(ncclInvalidArgument), "invalid argument (see ncclGetLastError)");
  // One rank on the null stream: the collective runs before the call returns.
  const float v[4] = {1, 2, 3, 4};
  ASSERT_EQ(cudaMemcpy(dev, v, sizeof(v), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(ncclAllReduce(dev, dev, 4, ncclFloat32, ncclAvg, comm, nullptr), ncclSuccess);
  EXPECT_EQ(Download<float>(dev, 4), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
  EXPECT_EQ(cudaFree(dev), cudaSuccess);
}

// --- failures: each on devices of its own -----------------------------------------------

// Checks that rank `rank`'s collective failed: its stream reports the fault, its communicator
// the async error and the reason.
void ExpectFailed(Rank& me, ncclResult_t code, const std::string& reason) {
  EXPECT_EQ(cudaStreamSynchronize(me.stream), cudaErrorLaunchFailure);
  ncclResult_t async = ncclSuccess;
  EXPECT_EQ(ncclCommGetAsyncError(me.comm, &async), ncclSuccess);
  EXPECT_EQ(async, code);
  EXPECT_THAT(ncclGetLastError(me.comm), HasSubstr(reason));
  EXPECT_EQ(ncclAllReduce(me.dev, me.dev, 1, ncclFloat32, ncclSum, me.comm, me.stream), code)
      << "later calls on the communicator return its error";
}

TEST(NcclHostFailures, RanksCallingDifferentCollectivesFailOnEveryRank) {
  const ncclUniqueId id = FreshId();
  ::testing::internal::CaptureStderr();
  RunRanks({4, 5}, [&](int rank) {
    Rank me;
    me.Init(2, id, rank, 64);
    if (rank == 0) {
      ASSERT_EQ(ncclAllReduce(me.dev, me.dev, 4, ncclFloat32, ncclSum, me.comm, me.stream),
                ncclSuccess);
    } else {
      ASSERT_EQ(ncclBroadcast(me.dev, me.dev, 16, ncclUint8, 0, me.comm, me.stream), ncclSuccess);
    }
    ExpectFailed(me, ncclInvalidUsage, "called ncclAllReduce(count 4, ncclFloat32, ncclSum)");
    me.Close(/*abort=*/true);
  });
  EXPECT_THAT(::testing::internal::GetCapturedStderr(),
              HasSubstr("ncclBroadcast(count 16, ncclUint8, root 0)"));
}

TEST(NcclHostFailures, ARankThatNeverArrivesIsATimeoutNamingIt) {
  ASSERT_EQ(setenv("SLUICE_SIMT_NCCL_TIMEOUT", "0.3", 1), 0);
  const ncclUniqueId id = FreshId();
  std::atomic<bool> rank0_done{false};
  ::testing::internal::CaptureStderr();
  const auto t0 = std::chrono::steady_clock::now();
  RunRanks({6, 0}, [&](int rank) {
    Rank me;
    me.Init(2, id, rank, 64);
    if (rank == 0) {
      ASSERT_EQ(ncclAllReduce(me.dev, me.dev, 4, ncclFloat32, ncclSum, me.comm, me.stream),
                ncclSuccess);
      ExpectFailed(me, ncclSystemError, "rank(s) 1 did not reach it within 0.3 s");
      rank0_done = true;
    } else {
      while (!rank0_done) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    me.Close(/*abort=*/rank == 0);
  });
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(unsetenv("SLUICE_SIMT_NCCL_TIMEOUT"), 0);
  (void)::testing::internal::GetCapturedStderr();
  EXPECT_LT(took, 10.0);
}

TEST(NcclHostFailures, AbortAndDestroyEndThePeersWaitAtOnce) {
  for (bool abort : {true, false}) {
    const ncclUniqueId id = FreshId();
    ::testing::internal::CaptureStderr();
    const auto t0 = std::chrono::steady_clock::now();
    // Rank 1 leaves without the collective; rank 0 (on a device of its own) waits in it.
    RunRanks({abort ? 7 : 8, 1}, [&](int rank) {
      Rank me;
      me.Init(2, id, rank, 64);
      if (rank == 0) {
        ASSERT_EQ(ncclAllReduce(me.dev, me.dev, 4, ncclFloat32, ncclSum, me.comm, me.stream),
                  ncclSuccess);
        ExpectFailed(me, ncclRemoteError,
                     abort ? "rank 1 called ncclCommAbort"
                           : "rank 1 destroyed its communicator after 0 collectives");
        me.Close(/*abort=*/true);
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        me.Close(abort);
      }
    });
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::string log = ::testing::internal::GetCapturedStderr();
    EXPECT_THAT(log, AllOf(HasSubstr("ncclAllReduce(count 4, ncclFloat32, ncclSum) #0"),
                           HasSubstr("rank 0 of 2")));
    EXPECT_LT(took, 10.0) << "the default timeout is 120 s: the wait ended by the abort";
  }
}

}  // namespace
