// The SIMT layer on purpose-written kernels: each collective's result against a plain loop, and
// each check the layer adds (divergent barrier, bad shuffle mask, thread order) on a kernel that
// has exactly that bug.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "gpu/simt/simt.h"
#include "sanitizers.h"

namespace sluice::simt {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// --- kernels -----------------------------------------------------------------------------

constexpr int kBlock = 256;

template <int kThreads>
__global__ void BlockSumKernelT(const int* in, int* out, int n) {
  __shared__ int sh[kThreads];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  sh[threadIdx.x] = i < n ? in[i] : 0;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = sh[0];
}
constexpr auto BlockSumKernel = BlockSumKernelT<kBlock>;
constexpr auto BlockSumKernel1024 = BlockSumKernelT<1024>;

// Per warp: the sum (shfl_down), the max (shfl_xor), an inclusive prefix sum (shfl_up) and
// lane 5's value broadcast (shfl).
__global__ void WarpKernel(const float* in, float* sum, float* max, float* scan, float* bcast) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int lane = threadIdx.x % warpSize;
  const float v = in[i];
  float s = v;
  for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
  float m = v;
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  float p = v;
  for (unsigned d = 1; d < 32; d <<= 1) {
    const float up = __shfl_up_sync(0xffffffffu, p, d);
    if (static_cast<unsigned>(lane) >= d) p += up;
  }
  scan[i] = p;
  bcast[i] = __shfl_sync(0xffffffffu, v, 5);
  max[i] = m;
  if (lane == 0) sum[i / warpSize] = s;
}

__global__ void VoteKernel(const int* in, unsigned* ballot, int* any, int* all) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned b = __ballot_sync(0xffffffffu, in[i] % 2);
  const int a = __any_sync(0xffffffffu, in[i] > 100);
  const int l = __all_sync(0xffffffffu, in[i] >= 0);
  __syncwarp();
  if (threadIdx.x % warpSize == 0) {
    ballot[i / warpSize] = b;
    any[i / warpSize] = a;
    all[i / warpSize] = l;
  }
}

// Reverses each block's slice through dynamic shared memory.
__global__ void ReverseKernel(const int* in, int* out) {
  SLUICE_DYNAMIC_SHARED(int, buf);
  const unsigned t = threadIdx.x;
  buf[t] = in[blockIdx.x * blockDim.x + t];
  __syncthreads();
  out[blockIdx.x * blockDim.x + t] = buf[blockDim.x - 1 - t];
}

__global__ void HistogramKernel(const int* in, int n, int* bins, float* total) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  atomicAdd(&bins[in[i] % 8], 1);
  atomicAdd(total, 0.5f);
}

__global__ void IndexKernel(int* out) {
  const unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const unsigned b = blockIdx.x + gridDim.x * blockIdx.y;
  out[b * blockDim.x * blockDim.y * blockDim.z + t] = static_cast<int>(b * 1000 + t);
}

// Thread 0 publishes a value the others read: correct only with the barrier.
template <bool kBarrier>
__global__ void BroadcastKernel(const int* in, int* out) {
  __shared__ int value;
  if (threadIdx.x == 0) value = in[blockIdx.x];
  if (kBarrier) __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = value;
}

// Two block sums through one shared array, each warp's partial from a shuffle reduction; thread
// 0 keeps both. Without the barrier after the first sum's reads, a warp that finishes its second
// shuffle reduction first overwrites its partial before thread 0 has read the first one.
template <bool kBarrier>
__global__ void TwoBlockSumsKernel(const int* in, int* out) {
  __shared__ int partial[8];
  int v = in[blockIdx.x * blockDim.x + threadIdx.x];
  for (int pass = 0; pass < 2; ++pass) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v * (pass + 1);
    __syncthreads();
    int total = 0;
    for (unsigned w = 0; w < blockDim.x / 32; ++w) total += partial[w];
    if (kBarrier) __syncthreads();
    if (threadIdx.x == 0) out[blockIdx.x * 2 + pass] = total;
  }
}

// The classic bug: out-of-range threads return before a barrier the others wait at.
__global__ void EarlyReturnKernel(const int* in, int* out, int n) {
  __shared__ int sh[64];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  sh[threadIdx.x] = in[i];
  __syncthreads();
  out[i] = sh[(threadIdx.x + 1) % blockDim.x];
}

// Every lane shuffles, but the mask names only the lower half.
__global__ void HalfMaskKernel(float* out) {
  out[threadIdx.x] = __shfl_down_sync(0x0000ffffu, 1.0f, 1);
}

// The full mask, but only the lower half of the warp calls: lane 15 reads lane 16, which exited.
__global__ void DivergentShuffleKernel(float* out) {
  if (threadIdx.x < 16) out[threadIdx.x] = __shfl_down_sync(0xffffffffu, 1.0f, 1);
}

// The upper half of the warp returns; the lower half goes on with the full mask, which CUDA
// allows (exited lanes named in a mask do not take part) as long as nobody reads an exited lane.
__global__ void ExitedLanesInMaskKernel(unsigned* ballot, int* all, float* xor_sum) {
  const unsigned lane = threadIdx.x % warpSize;
  if (lane >= 16) return;
  __syncwarp(0xffffffffu);
  const unsigned b = __ballot_sync(0xffffffffu, lane % 2);
  const int a = __all_sync(0xffffffffu, 1);
  const float mine = static_cast<float>(lane);
  const float x = mine + __shfl_xor_sync(0xffffffffu, mine, 8);
  if (lane == 0) {
    *ballot = b;
    *all = a;
  }
  xor_sum[lane] = x;
}

// The full mask, the upper half of the warp waits at __syncthreads instead: still running, named,
// never arriving. A GPU hangs or returns garbage.
__global__ void ShuffleWhileOthersAtBarrierKernel(float* out) {
  float v = 1.0f;
  if (threadIdx.x < 16) v = __shfl_xor_sync(0xffffffffu, v, 1);
  __syncthreads();
  out[threadIdx.x] = v;
}

// Each level keeps 1 KiB on the stack: deep enough, it runs off the 64 KiB fiber stack.
__device__ int Recurse(int depth) {
  volatile char frame[1024];
  frame[0] = static_cast<char>(depth);
  frame[sizeof(frame) - 1] = static_cast<char>(depth);
  if (depth == 0) return frame[0];
  return Recurse(depth - 1) + frame[sizeof(frame) - 1];
}
__global__ void StackOverflowKernel(int depth, int* out) { *out = Recurse(depth); }

// Reads its dynamic shared memory so that a launch that is not refused touches all of it.
__global__ void BigSharedKernel(int* out) {
  SLUICE_DYNAMIC_SHARED(char, buf);
  buf[48 * 1024 - 1] = 1;
  *out = buf[48 * 1024 - 1];
}

// The lower half's own mask, but lane 8 reads lane 16, outside it.
__global__ void ReadOutsideMaskKernel(float* out) {
  if (threadIdx.x < 16) out[threadIdx.x] = __shfl_down_sync(0x0000ffffu, 1.0f, 8);
}

// Two reducing barriers in a row per block: how many inputs are odd, whether all are positive,
// whether any exceeds 100 (the second pass sees the inputs shifted by one thread).
__global__ void ReducingBarrierKernel(const int* in, int* out) {
  const int* x = in + blockIdx.x * blockDim.x;
  const unsigned t = threadIdx.x, n = blockDim.x;
  int* o = out + blockIdx.x * 6;
  for (int pass = 0; pass < 2; ++pass) {
    const int v = x[(t + pass) % n];
    const int count = __syncthreads_count(v % 2 != 0);
    const int all = __syncthreads_and(v > 0);
    const int any = __syncthreads_or(v > 100);
    if (t == n - 1) {
      o[pass * 3] = count;
      o[pass * 3 + 1] = all;
      o[pass * 3 + 2] = any;
    }
  }
}

// Thread 0 meets the others' __syncthreads_or at a plain __syncthreads.
__global__ void MixedBarrierKernel(int* out) {
  if (threadIdx.x == 0) {
    __syncthreads();
  } else {
    out[threadIdx.x] = __syncthreads_or(1);
  }
}

// a * b + c where the exact product needs more than 24 bits: rounding it first (the _rn promise)
// and a fused multiply-add differ. Also CUDA's global min/max overloads.
__global__ void RoundedProductKernel(const float* in, float* out) {
  out[0] = __fadd_rn(__fmul_rn(in[0], in[1]), in[2]);
  out[1] = __fmul_rn(in[0], in[1]) + in[2];  // contraction of this is what -ffp-contract=off stops
  out[2] = min(max(static_cast<int>(in[0]), -3), 5) + min(2u, 7u) + max(-1.5f, in[1]);
}

// The last thread reads one element past the end of `in` (a block of 32 threads, 32 inputs).
[[maybe_unused]] __global__ void OverrunKernel(const int* in, int* out) {
  out[threadIdx.x] = in[threadIdx.x + 1];
}

// --- tests -------------------------------------------------------------------------------

// Runs each test in forward order and restores it afterwards.
class SimtTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SetOrder({});
    (void)TakeLastError();
  }
  void TearDown() override { SetOrder({}); }
};

// The last launch's error message, "" when it succeeded.
std::string LaunchError() { return TakeLastError().message(); }

const Order kOrders[] = {{OrderMode::kForward, 0}, {OrderMode::kReverse, 0},
                         {OrderMode::kRandom, 1}, {OrderMode::kRandom, 2}};

TEST_F(SimtTest, BlockReductionWithSharedMemory) {
  const int n = 1000;
  std::vector<int> in(n);
  for (int i = 0; i < n; ++i) in[i] = (i * 37) % 101 - 50;
  const int blocks = (n + kBlock - 1) / kBlock;
  for (const Order& order : kOrders) {
    SetOrder(order);
    std::vector<int> out(blocks, -1);
    SLUICE_LAUNCH(BlockSumKernel, blocks, kBlock, 0, nullptr)(in.data(), out.data(), n);
    ASSERT_TRUE(TakeLastError().ok());
    for (int b = 0; b < blocks; ++b) {
      const int end = std::min(n, (b + 1) * kBlock);
      EXPECT_EQ(out[b], std::accumulate(in.begin() + b * kBlock, in.begin() + end, 0)) << b;
    }
  }
}

TEST_F(SimtTest, WarpShuffles) {
  const int n = 128;  // two blocks of two warps
  std::vector<float> in(n);
  for (int i = 0; i < n; ++i) in[i] = static_cast<float>((i * 13) % 29);
  for (const Order& order : kOrders) {
    SetOrder(order);
    std::vector<float> sum(n / 32), max(n), scan(n), bcast(n);
    SLUICE_LAUNCH(WarpKernel, 2, 64, 0, nullptr)(in.data(), sum.data(), max.data(), scan.data(),
                                                  bcast.data());
    ASSERT_TRUE(TakeLastError().ok());
    for (int w = 0; w < n / 32; ++w) {
      float s = 0, m = in[w * 32], p = 0;
      for (int l = 0; l < 32; ++l) {
        const int i = w * 32 + l;
        s += in[i];
        m = std::max(m, in[i]);
        p += in[i];
        EXPECT_EQ(scan[i], p) << i;
        EXPECT_EQ(bcast[i], in[w * 32 + 5]) << i;
      }
      EXPECT_EQ(sum[w], s) << w;
      for (int l = 0; l < 32; ++l) EXPECT_EQ(max[w * 32 + l], m);
    }
  }
}

TEST_F(SimtTest, BallotAnyAll) {
  std::vector<int> in(64);
  for (int i = 0; i < 64; ++i) in[i] = i < 32 ? i * 3 : 7;  // warp 1: all odd, none > 100
  in[40] = 200;                                                // ...but one > 100
  in[3] = -1;                                                  // warp 0: not all >= 0
  std::vector<unsigned> ballot(2);
  std::vector<int> any(2), all(2);
  SLUICE_LAUNCH(VoteKernel, 1, 64, 0, nullptr)(in.data(), ballot.data(), any.data(), all.data());
  ASSERT_TRUE(TakeLastError().ok());
  for (int w = 0; w < 2; ++w) {
    unsigned expect = 0;
    for (int l = 0; l < 32; ++l) expect |= (in[w * 32 + l] % 2 != 0 ? 1u : 0u) << l;
    EXPECT_EQ(ballot[w], expect) << w;
  }
  EXPECT_EQ(any[0], 0);
  EXPECT_EQ(any[1], 1);
  EXPECT_EQ(all[0], 0);
  EXPECT_EQ(all[1], 1);
}

TEST_F(SimtTest, DynamicSharedMemory) {
  const int block = 96, blocks = 3;
  std::vector<int> in(block * blocks), out(in.size());
  std::iota(in.begin(), in.end(), 1);
  SLUICE_LAUNCH(ReverseKernel, blocks, block, block * sizeof(int), nullptr)(in.data(),
                                                                             out.data());
  ASSERT_TRUE(TakeLastError().ok());
  for (int b = 0; b < blocks; ++b) {
    for (int t = 0; t < block; ++t) EXPECT_EQ(out[b * block + t], in[b * block + block - 1 - t]);
  }
}

TEST_F(SimtTest, AtomicsAcrossBlocks) {
  const int n = 3000;
  std::vector<int> in(n), bins(8, 0), expect(8, 0);
  for (int i = 0; i < n; ++i) {
    in[i] = (i * 7919) % 1000;
    ++expect[in[i] % 8];
  }
  float total = 0;
  SLUICE_LAUNCH(HistogramKernel, (n + 127) / 128, 128, 0, nullptr)(in.data(), n, bins.data(),
                                                                    &total);
  ASSERT_TRUE(TakeLastError().ok());
  EXPECT_EQ(bins, expect);
  EXPECT_EQ(total, 0.5f * n);
}

TEST_F(SimtTest, MultiDimensionalIndices) {
  const dim3 grid(3, 2), block(4, 3, 2);
  std::vector<int> out(6 * 24, -1);
  SLUICE_LAUNCH(IndexKernel, grid, block, 0, nullptr)(out.data());
  ASSERT_TRUE(TakeLastError().ok());
  for (int b = 0; b < 6; ++b) {
    for (int t = 0; t < 24; ++t) EXPECT_EQ(out[b * 24 + t], b * 1000 + t);
  }
}

// The order modes at work: without its barrier, the broadcast is right only when thread 0
// happens to run first; reverse order makes the missing barrier visible.
TEST_F(SimtTest, MissingBarrierChangesResultUnderReverseOrder) {
  const int block = 64, blocks = 3;
  const std::vector<int> in = {100, 200, 300};
  std::vector<int> expect(block * blocks);
  for (int i = 0; i < block * blocks; ++i) expect[i] = in[i / block];
  auto run = [&](auto kernel, Order order) {
    SetOrder(order);
    std::vector<int> out(block * blocks, -1);
    SLUICE_LAUNCH(kernel, blocks, block, 0, nullptr)(in.data(), out.data());
    EXPECT_TRUE(TakeLastError().ok());
    return out;
  };
  for (const Order& order : kOrders) EXPECT_EQ(run(BroadcastKernel<true>, order), expect);
  EXPECT_EQ(run(BroadcastKernel<false>, {OrderMode::kForward, 0}), expect);
  EXPECT_NE(run(BroadcastKernel<false>, {OrderMode::kReverse, 0}), expect);
  // A seeded random order is reproducible, and exposes the bug for some seed.
  bool exposed = false;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    const auto a = run(BroadcastKernel<false>, {OrderMode::kRandom, seed});
    EXPECT_EQ(run(BroadcastKernel<false>, {OrderMode::kRandom, seed}), a) << seed;
    exposed |= a != expect;
  }
  EXPECT_TRUE(exposed);
}

// A warp whose shuffle completes runs on ahead of the other warps, as on a GPU: the missing
// barrier between two block sums then changes thread 0's result in reverse and random order
// (thread 0's warp runs first in forward order, so it reads before anyone overwrites). Before
// warps ran ahead, every order passed: all threads reached the next shuffle before any left one.
TEST_F(SimtTest, MissingBarrierBetweenShuffleReductionsChangesResult) {
  const int block = 256, blocks = 8;
  std::vector<int> in(block * blocks), expect(blocks * 2);
  for (int i = 0; i < block * blocks; ++i) in[i] = i % 5 + 1;  // every warp sum positive
  for (int b = 0; b < blocks; ++b) {
    // Pass 0: every lane holds its warp's sum; pass 1 adds the warp's sum 32 times: each
    // partial is 32 * warp sum * 2.
    const int sum = std::accumulate(in.begin() + b * block, in.begin() + (b + 1) * block, 0);
    expect[b * 2] = sum;
    expect[b * 2 + 1] = 64 * sum;
  }
  auto run = [&](auto kernel, Order order) {
    SetOrder(order);
    std::vector<int> out(blocks * 2, -1);
    SLUICE_LAUNCH(kernel, blocks, block, 0, nullptr)(in.data(), out.data());
    EXPECT_EQ(LaunchError(), "");
    return out;
  };
  for (const Order& order : kOrders) EXPECT_EQ(run(TwoBlockSumsKernel<true>, order), expect);
  EXPECT_NE(run(TwoBlockSumsKernel<false>, {OrderMode::kReverse, 0}), expect);
  // In random order thread 0 reads late enough in some blocks of some seed.
  bool exposed = false;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    exposed |= run(TwoBlockSumsKernel<false>, {OrderMode::kRandom, seed}) != expect;
  }
  EXPECT_TRUE(exposed);
}

TEST_F(SimtTest, DivergentBarrierIsAnErrorNamingTheKernel) {
  const int n = 100;  // the second block has 36 threads in range and 28 past the end
  std::vector<int> in(n, 1), out(n, 0);
  SLUICE_LAUNCH(EarlyReturnKernel, 2, 64, 0, nullptr)(in.data(), out.data(), n);
  EXPECT_THAT(LaunchError(),
              AllOf(HasSubstr("kernel EarlyReturnKernel, block (1,0,0)"),
                    HasSubstr("__syncthreads reached by threads 0-35 but threads 36-63 returned")));
  EXPECT_EQ(LaunchError(), "") << "TakeLastError clears the error";
}

TEST_F(SimtTest, ShuffleMaskLeavingOutACallingLaneIsAnError) {
  std::vector<float> out(32);
  SLUICE_LAUNCH(HalfMaskKernel, 1, 32, 0, nullptr)(out.data());
  EXPECT_THAT(LaunchError(),
              AllOf(HasSubstr("kernel HalfMaskKernel"),
                    HasSubstr("mask 0x0000ffff is called by lane 16, which the mask leaves out")));
}

TEST_F(SimtTest, ShuffleReadingAnExitedLaneIsAnError) {
  std::vector<float> out(32);
  SLUICE_LAUNCH(DivergentShuffleKernel, 1, 32, 0, nullptr)(out.data());
  EXPECT_THAT(LaunchError(), AllOf(HasSubstr("kernel DivergentShuffleKernel"),
                                   HasSubstr("lane 15 reads lane 16, which has exited")));
}

TEST_F(SimtTest, MaskNamingExitedLanesIsAllowedAsInCuda) {
  for (const Order& order : kOrders) {
    SetOrder(order);
    unsigned ballot = 0;
    int all = 0;
    std::vector<float> xor_sum(16, -1.0f);
    SLUICE_LAUNCH(ExitedLanesInMaskKernel, 1, 32, 0, nullptr)(&ballot, &all, xor_sum.data());
    ASSERT_EQ(LaunchError(), "") << "order " << static_cast<int>(order.mode);
    EXPECT_EQ(ballot, 0x0000aaaau) << "only the lanes still running vote";
    EXPECT_EQ(all, 1) << "__all_sync over the lanes still running";
    for (int l = 0; l < 16; ++l) EXPECT_EQ(xor_sum[l], static_cast<float>(l + (l ^ 8))) << l;
  }
}

TEST_F(SimtTest, MaskNamingALaneWaitingElsewhereIsAnError) {
  std::vector<float> out(32);
  SLUICE_LAUNCH(ShuffleWhileOthersAtBarrierKernel, 1, 32, 0, nullptr)(out.data());
  EXPECT_THAT(LaunchError(), AllOf(HasSubstr("kernel ShuffleWhileOthersAtBarrierKernel"),
                                   HasSubstr("names lane 16, which waits at __syncthreads")));
}

TEST_F(SimtTest, DynamicSharedMemoryOver48KiBIsRefusedNamingTheKernel) {
  int out = 0;
  SLUICE_LAUNCH(BigSharedKernel, 1, 1, 48 * 1024, nullptr)(&out);
  ASSERT_EQ(LaunchError(), "");
  EXPECT_EQ(out, 1);
  out = 0;
  SLUICE_LAUNCH(BigSharedKernel, 1, 1, 48 * 1024 + 1, nullptr)(&out);
  EXPECT_THAT(LaunchError(), AllOf(HasSubstr("kernel BigSharedKernel: 49153 bytes of dynamic "
                                             "shared memory; CUDA allows 49152"),
                                   HasSubstr("cudaFuncSetAttribute")));
  EXPECT_EQ(out, 0) << "a refused launch does not run";
}

TEST_F(SimtTest, ShuffleReadingOutsideTheMaskIsAnError) {
  std::vector<float> out(32);
  SLUICE_LAUNCH(ReadOutsideMaskKernel, 1, 32, 0, nullptr)(out.data());
  EXPECT_THAT(LaunchError(), HasSubstr("lane 8 reads lane 16, outside the mask"));
}

TEST_F(SimtTest, BadLaunchConfigurationIsAnError) {
  std::vector<float> out(32);
  SLUICE_LAUNCH(HalfMaskKernel, 1, 2048, 0, nullptr)(out.data());
  EXPECT_THAT(LaunchError(), HasSubstr("kernel HalfMaskKernel: block (2048,1,1) has 2048 threads"));
}

TEST_F(SimtTest, ReducingBarriersCountAndAndOrOverTheBlock) {
  const int block = 96, blocks = 3;  // three warps, the last two blocks' inputs all positive
  std::vector<int> in(block * blocks);
  for (int i = 0; i < block * blocks; ++i) in[i] = i < block ? i * 7 % 13 : 1 + i % 90;
  in[block + 5] = 150;
  for (const Order& order : kOrders) {
    SetOrder(order);
    std::vector<int> out(blocks * 6, -1);
    SLUICE_LAUNCH(ReducingBarrierKernel, blocks, block, 0, nullptr)(in.data(), out.data());
    ASSERT_EQ(LaunchError(), "");
    for (int b = 0; b < blocks; ++b) {
      int odd = 0, all = 1, any = 0;
      for (int t = 0; t < block; ++t) {
        const int v = in[b * block + t];
        odd += v % 2 != 0;
        all &= v > 0;
        any |= v > 100;
      }
      // Both passes see the same multiset of values.
      for (int pass = 0; pass < 2; ++pass) {
        EXPECT_EQ(out[b * 6 + pass * 3], odd) << b;
        EXPECT_EQ(out[b * 6 + pass * 3 + 1], all) << b;
        EXPECT_EQ(out[b * 6 + pass * 3 + 2], any) << b;
      }
    }
  }
}

TEST_F(SimtTest, PlainAndReducingBarrierMixedIsAnError) {
  std::vector<int> out(64);
  SLUICE_LAUNCH(MixedBarrierKernel, 1, 64, 0, nullptr)(out.data());
  EXPECT_THAT(LaunchError(),
              AllOf(HasSubstr("kernel MixedBarrierKernel"),
                    HasSubstr("63 threads at __syncthreads_count/_and/_or and the others at "
                              "__syncthreads")));
}

TEST_F(SimtTest, RoundedIntrinsicsAreNotFused) {
  // a * b = 1 + 2^-11 + 2^-24 exactly: half an ulp above 1 + 2^-11, which it rounds to (even).
  const float a = 1.0f + 0x1p-12f, b = a, c = -(1.0f + 0x1p-11f);
  std::vector<float> in = {a, b, c}, out(3);
  SLUICE_LAUNCH(RoundedProductKernel, 1, 1, 0, nullptr)(in.data(), out.data());
  ASSERT_EQ(LaunchError(), "");
  EXPECT_EQ(std::fma(a, b, c), 0x1p-24f);  // fused: the exact product's tail survives
  EXPECT_EQ(out[0], 0.0f);                 // rounded product, then the sum
  EXPECT_EQ(out[1], 0.0f);
  EXPECT_EQ(out[2], 1 + 2 + b);
}

// A big block with many barriers stays fast: 16 blocks of 1024 fibers, 11 barriers each.
TEST_F(SimtTest, FullSizeBlocksRunQuickly) {
  const int n = 16 * 1024;
  std::vector<int> in(n, 1), out(16, 0);
  const auto start = std::chrono::steady_clock::now();
  SLUICE_LAUNCH(BlockSumKernel1024, 16, 1024, 0, nullptr)(in.data(), out.data(), n);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(TakeLastError().ok());
  EXPECT_EQ(out, std::vector<int>(16, 1024));
  EXPECT_LT(took, 5.0);
  std::printf("16 blocks x 1024 threads x 11 barriers: %.3f s\n", took);
}

// Kernels run under ASan in the sanitizer build: an out-of-bounds read of a kernel argument is
// reported (and ends the process), with the fibers' stacks known to ASan.
TEST(SimtDeathTest, OutOfBoundsGlobalReadIsCaughtUnderAsan) {
#if !defined(SLUICE_TEST_ASAN)
  GTEST_SKIP() << "needs the ASan build (./run.sh test --sanitize)";
#else
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  std::vector<int> in(32, 1), out(32);
  EXPECT_DEATH(SLUICE_LAUNCH(OverrunKernel, 1, 32, 0, nullptr)(in.data(), out.data()),
               "heap-buffer-overflow");
#endif
}

// Every fiber stack has an inaccessible guard below it: running off the stack faults at once
// instead of writing over whatever lies below (another fiber's stack, the heap).
TEST(SimtDeathTest, StackOverflowFaultsOnTheGuard) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  int out = 0;
  SLUICE_LAUNCH(StackOverflowKernel, 1, 1, 0, nullptr)(16, &out);  // 16 KiB: fits
  ASSERT_TRUE(TakeLastError().ok());
  EXPECT_EQ(out, 16 * 17 / 2);
  // 72 KiB: a few KiB past the end, where memory below a heap-allocated stack would be mapped
  // (and silently overwritten).
  EXPECT_DEATH(SLUICE_LAUNCH(StackOverflowKernel, 1, 1, 0, nullptr)(72, &out), "");
}

}  // namespace
}  // namespace sluice::simt
