#include "trainer/model_flops.h"

#include "reference/conv2d.h"

namespace sluice::train {

double ForwardFlops(const reference::ModelConfig& c, int64_t B, int64_t T) {
  const double C = c.d_model, D = c.d_ff, V = c.vocab;
  const double T1 = reference::Conv2dOutSize(static_cast<int>(T));
  const double T2 = reference::SubsampledLength(static_cast<int>(T));
  const double F1 = reference::Conv2dOutSize(c.n_mels);
  const double F2 = reference::Conv2dOutSize(static_cast<int>(F1));
  const double b = static_cast<double>(B);
  if (T2 <= 0) return 0;
  double macs = 0;
  macs += b * T1 * F1 * C * 9;           // conv1: 1 -> C channels, 3x3
  macs += b * T2 * F2 * C * 9 * C;       // conv2: C -> C channels, 3x3 (im2col GEMM)
  macs += b * T2 * (C * F2) * C;         // subsampling linear
  const double N = b * T2;               // frames after subsampling
  const double layer = N * C * 3 * C     // qkv
                       + 2 * b * T2 * T2 * C  // QK^T and PV over all heads
                       + N * C * C       // attention projection
                       + 2 * N * C * D;  // fc1, fc2
  macs += c.n_layers * layer;
  macs += N * C * V;                     // output head
  return 2 * macs;
}

double TrainStepFlops(const reference::ModelConfig& config, int64_t B, int64_t T) {
  return 3 * ForwardFlops(config, B, T);
}

double PeakBf16Flops(const std::string& d) {
  auto has = [&](const char* s) { return d.find(s) != std::string::npos; };
  if (has("H200") || has("GH200")) return 989e12;
  if (has("H100")) {
    if (has("PCIe")) return 756e12;
    if (has("NVL")) return 835e12;
    return 989e12;  // SXM (HBM3)
  }
  if (has("B200")) return 2250e12;
  if (has("A100")) return 312e12;
  if (has("L40S")) return 362e12;
  return 0;
}

}  // namespace sluice::train
