// AdamW and global-norm clipping on the GPU against reference/optimizer.h. The AdamW kernel
// evaluates the reference's double formula with explicitly rounded operations, so it should be
// bit for bit; the test allows 1e-6 relative in case the host compiler contracts to FMA. The norm
// sums in a different order (double): 1e-12 relative; clipped gradients differ by at most one
// float rounding of the scale: 1e-6.
#include <gtest/gtest.h>

#include <memory>

#include "gpu/model/optimizer.h"
#include "reference/optimizer.h"
#include "test_util.h"

namespace sluice::gpu::model {
namespace {

using namespace testing;

TEST(GpuOptimizer, AdamWMatchesReferenceOverSteps) {
  SKIP_WITHOUT_GPU();
  // A tiny model's layout: decayed weights interleaved with biases and norms.
  const reference::ModelConfig config = reference::ModelConfig::Tiny(11, 20);
  const std::vector<reference::ParamTensor> layout = reference::ParameterLayout(config);
  const size_t n = layout.back().offset + layout.back().count;
  reference::AdamWOptions o;
  o.weight_decay = 0.1;
  std::vector<float> params = Random(n, 1);
  reference::AdamW<float> ref(layout, o);
  std::unique_ptr<CudaAdamW> gpu;
  ASSERT_OK(CudaAdamW::Create(layout, o, &gpu));
  auto dp = ToDevice(params);
  for (int step = 1; step <= 4; ++step) {
    const std::vector<float> grads = Random(n, 100 + step, -0.01f * step, 0.02f);
    auto dg = ToDevice(grads);
    ref.Step(params.data(), grads.data(), 1e-3 * step);
    ASSERT_OK(gpu->Step(dp.data(), dg.data(), 1e-3 * step, nullptr));
  }
  EXPECT_EQ(gpu->step(), ref.step());
  ExpectClose("params", ToHost(dp, n), params, 1e-6, 1e-6, 0);
  std::vector<float> m, v;
  ASSERT_OK(gpu->Download(&m, &v, nullptr));
  ExpectClose("m", m, ref.m(), 1e-6, 1e-6, 0);
  ExpectClose("v", v, ref.v(), 1e-6, 1e-6, 0);
}

TEST(GpuOptimizer, ClipByGlobalNormMatchesReference) {
  SKIP_WITHOUT_GPU();
  const size_t n = 1000003;
  for (double max_norm : {0.0, 1.0, 1e6}) {
    std::vector<float> grads = Random(n, 7, -0.1f, 0.1f);
    auto dg = ToDevice(grads);
    auto norm = Zeros<double>(1);
    auto scratch = Zeros<double>(GlobalNormScratch());
    const double want = reference::ClipByGlobalNorm(grads.data(), n, max_norm);
    ASSERT_OK(ClipByGlobalNorm(dg.data(), n, max_norm, norm.data(), scratch.data(), nullptr));
    const double got = ToHost(norm, 1)[0];
    EXPECT_NEAR(got, want, 1e-12 * want) << "max_norm " << max_norm;
    ExpectClose("clipped, max_norm " + std::to_string(max_norm), ToHost(dg, n), grads, 1e-6, 1e-6,
                0);
  }
}

}  // namespace
}  // namespace sluice::gpu::model
