// NCCL with one rank on a real GPU (suite 'gpu'; skipped without a device): the collectives, the
// guard and a bucketed lane run end to end through the library.
#include "gpu/nccl_communicator.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "assert_ok.h"
#include "comm/gradient_buckets.h"
#include "gpu/device.h"
#include "require_gpu.h"

namespace sluice::gpu {
namespace {

TEST(NcclCommunicator, OneRankCollectivesBucketsAndGuard) {
  int n = 0;
  const Status probe = ProbeDevices(&n);
  if (!probe.ok()) SLUICE_GPU_UNAVAILABLE(probe.message());
  sluice::comm::LaunchEnv env;  // rank 0 of 1
  std::unique_ptr<NcclCommunicator> comm;
  const Status st = NcclCommunicator::Create(env, NcclOptions(), &comm);
  ASSERT_OK(st);
  EXPECT_EQ(comm->world(), 1);

  const size_t count = 1 << 20;
  std::vector<float> host(count);
  for (size_t i = 0; i < count; ++i) host[i] = static_cast<float>(i % 977);
  std::unique_ptr<DeviceBuffer> dev;
  ASSERT_OK(DeviceBuffer::Allocate(count * sizeof(float), &dev));
  float* d = static_cast<float*>(dev->data());
  ASSERT_OK(CopyHostToDevice(d, host.data(), count * sizeof(float), comm->stream()));
  ASSERT_OK(comm->AllReduceAverage(d, count));
  ASSERT_OK(comm->Broadcast(d, count * sizeof(float), 0));
  std::unique_ptr<sluice::comm::ReduceLane> lane;
  ASSERT_OK(comm->MakeLane(&lane));
  sluice::comm::GradientBuckets buckets(d, count, 100000, lane.get());
  ASSERT_OK(buckets.MarkReady(0, count));
  ASSERT_OK(buckets.Finish());
  std::vector<float> back(count);
  ASSERT_OK(CopyDeviceToHost(back.data(), d, count * sizeof(float), comm->stream()));
  ASSERT_OK(comm->Barrier());
  EXPECT_EQ(back, host) << "the mean over one rank is the data itself";
  EXPECT_OK(sluice::comm::AgreeOnBatchCount(comm.get(), 42, "epoch 0"));
}

}  // namespace
}  // namespace sluice::gpu
