// The MFU estimate's two halves (trainer/model_flops.h): FLOPs from the configuration and
// shapes, counted by hand for a small case; and the peak table's lookups.
#include <gtest/gtest.h>

#include "trainer/model_flops.h"

namespace sluice::train {
namespace {

TEST(ModelFlops, CountsTheProductsOfATinyModelByHand) {
  reference::ModelConfig c = reference::ModelConfig::Tiny(/*vocab=*/10, /*n_mels=*/7);
  c.n_layers = 1;
  // T 7 -> T1 3 -> T' 1; F 7 -> F1 3 -> F2 1. C 32, d_ff 128, vocab 10, B 2.
  const double C = 32, D = 128, V = 10, B = 2;
  const double macs = B * 3 * 3 * C * 9   // conv1 over [3, 3] outputs
                      + B * 1 * 1 * C * 9 * C  // conv2
                      + B * 1 * C * C          // subsampling linear (C * F2 inputs)
                      + B * C * 3 * C + 2 * B * 1 * 1 * C + B * C * C + 2 * B * C * D  // the layer
                      + B * C * V;             // head
  EXPECT_DOUBLE_EQ(ForwardFlops(c, 2, 7), 2 * macs);
  EXPECT_DOUBLE_EQ(TrainStepFlops(c, 2, 7), 6 * macs);
  EXPECT_EQ(ForwardFlops(c, 2, 6), 0.0);  // too short for the subsampling: no output frame
}

TEST(ModelFlops, AttentionGrowsQuadraticallyWithLength) {
  const reference::ModelConfig c = reference::ModelConfig::Small(32, 80);
  // Doubling T doubles everything but attention's T'^2 terms: more than double.
  EXPECT_GT(ForwardFlops(c, 1, 4003), 2 * ForwardFlops(c, 1, 2003));
  EXPECT_DOUBLE_EQ(ForwardFlops(c, 4, 1003), 4 * ForwardFlops(c, 1, 1003));
}

TEST(ModelFlops, PeakTableKnowsTheUsualGpus) {
  EXPECT_EQ(PeakBf16Flops("NVIDIA H100 80GB HBM3 (sm_90, 79.1 GiB)"), 989e12);
  EXPECT_EQ(PeakBf16Flops("NVIDIA H100 PCIe (sm_90, 79.1 GiB)"), 756e12);
  EXPECT_EQ(PeakBf16Flops("NVIDIA H200 (sm_90, 139.8 GiB)"), 989e12);
  EXPECT_EQ(PeakBf16Flops("NVIDIA A100-SXM4-80GB (sm_80, 79.2 GiB)"), 312e12);
  EXPECT_EQ(PeakBf16Flops("Some Other GPU (sm_75, 16 GiB)"), 0.0);
}

}  // namespace
}  // namespace sluice::train
