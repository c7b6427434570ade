// The whole CUDA model against reference::Model<float> on the tiny preset, with dropout on and
// padded utterances: loss, log-probabilities and every parameter tensor's gradient, and the
// ready-hook order. The GPU rounds every GEMM operand to bf16 (2^-8 relative at most each), and a
// gradient passes through ~15 such GEMMs between the loss and the first convolution, errors
// adding roughly in quadrature; 5e-2 relative L2 per tensor leaves room for that while an
// indexing or layout mistake (an O(1) error) still fails. The loss is a mean of well-conditioned
// sums: 1e-2 relative.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>

#include "assert_ok.h"
#include "gpu/model/model.h"
#include "reference/conv2d.h"
#include "reference/model.h"
#include "test_util.h"
#if defined(SLUICE_SIMT_DEVICE)
#include "gpu/simt/cuda_runtime_host.h"
#endif

namespace sluice::gpu::model {
namespace {

using namespace testing;

struct HostBatch {
  int B = 3, T = 61, F = 20, S = 6;
  std::vector<float> features;
  std::vector<int32_t> frames{61, 45, 9}, labels, label_lengths{5, 3, 4};
};

HostBatch MakeBatch() {
  HostBatch h;
  h.features = Random(static_cast<size_t>(h.B) * h.T * h.F, 11, -1, 1);
  h.labels.assign(static_cast<size_t>(h.B) * h.S, 0);
  const std::vector<std::vector<int32_t>> l = {
      {1, 2, 3, 4, 5}, {6, 6, 2}, {7, 8, 9, 10}};  // the last is impossible
  for (int b = 0; b < h.B; ++b)
    for (size_t i = 0; i < l[b].size(); ++i) h.labels[b * h.S + i] = l[b][i];
  return h;
}

// A HostBatch's arrays in device memory; batch() is the CudaBatch over them.
struct BatchOnDevice {
  explicit BatchOnDevice(const HostBatch& h)
      : B(h.B),
        T(h.T),
        S(h.S),
        features(ToDevice(h.features)),
        frames(ToDevice(h.frames)),
        labels(ToDevice(h.labels)),
        label_lengths(ToDevice(h.label_lengths)) {}
  CudaBatch batch() const {
    return {features.data(), frames.data(), labels.data(), label_lengths.data(), B, T, S};
  }
  int B, T, S;
  DeviceArray<float> features;
  DeviceArray<int32_t> frames, labels, label_lengths;
};

// Room for MakeBatch's batch (3 rows, 61 frames, 6 labels) and one row more.
CudaModelOptions BatchCapacity() {
  CudaModelOptions o;
  o.max_batch = 4;
  o.max_frames = 80;
  o.max_labels = 8;
  return o;
}

// The tiny preset with `act` in its feed-forward blocks against the reference, two steps.
void ExpectTinyPresetMatchesReference(reference::Activation act) {
  reference::ModelConfig config = reference::ModelConfig::Tiny(11, 20);
  config.dropout = 0.1f;
  config.activation = act;
  const HostBatch h = MakeBatch();
  const reference::StepContext ctx{42, 3, true};

  reference::Model<float> ref(config);
  ref.InitParameters(5);
  const reference::ModelBatch<float> rb{h.features.data(), h.frames.data(),        h.B, h.T,
                                        h.labels.data(),   h.label_lengths.data(), h.S};
  float ref_loss = 0;
  ASSERT_OK(ref.Forward(rb, ctx, &ref_loss));
  ref.ZeroGrad();
  ref.Backward();

  std::unique_ptr<CudaModel> gpu;
  ASSERT_OK(CudaModel::Create(config, BatchCapacity(), &gpu));
  ASSERT_EQ(gpu->num_parameters(), ref.num_parameters());
  ASSERT_OK(gpu->InitParameters(5));
  std::vector<float> p(gpu->num_parameters());
  ASSERT_OK(gpu->DownloadParameters(p.data()));
  EXPECT_EQ(std::memcmp(p.data(), ref.params(), p.size() * 4), 0);

  const BatchOnDevice d(h);
  const CudaBatch cb = d.batch();
  std::vector<size_t> order;
  // Two steps: the second reuses every buffer (and must give the same answer).
  for (int rep = 0; rep < 2; ++rep) {
    float loss = 0;
    ASSERT_OK(gpu->Forward(cb, ctx, &loss));
    EXPECT_NEAR(loss, ref_loss, 1e-2 * std::abs(ref_loss)) << "rep " << rep;
    std::vector<int32_t> out_len;
    ASSERT_OK(gpu->DownloadOutputLengths(&out_len));
    EXPECT_EQ(out_len, ref.output_lengths());
    std::vector<float> losses;
    ASSERT_OK(gpu->DownloadLosses(&losses));
    EXPECT_EQ(losses[2], 0.0f);  // impossible alignment, zero_infinity
    std::vector<float> lp;
    ASSERT_OK(gpu->DownloadLogProbs(&lp));
    const std::vector<float> ref_lp(ref.log_probs(), ref.log_probs() + lp.size());
    ExpectClose("log_probs", lp, ref_lp, 2e-2, 5e-2);

    ASSERT_OK(gpu->ZeroGrad());
    order.clear();
    ASSERT_OK(gpu->Backward([&](size_t offset, size_t count) {
      order.push_back(offset);
      order.push_back(count);
    }));
    std::vector<float> g(gpu->num_parameters());
    ASSERT_OK(gpu->DownloadGrads(g.data()));
    for (const reference::ParamTensor& t : gpu->layout()) {
      const std::vector<float> got(g.begin() + t.offset, g.begin() + t.offset + t.count);
      const std::vector<float> want(ref.grads() + t.offset, ref.grads() + t.offset + t.count);
      // The convolutions' gradients sit behind conv2's ReLU, whose mask the bf16 conv2 GEMM flips
      // at the few outputs within rounding of 0 (~1e-3 of them). Each flip moves these gradients
      // by a whole term: simulated on this shape, 2-9% relative L2 and up to ~25% of the scale per
      // element for conv2.weight, before any bf16 error. ops_test checks the convolutions
      // tightly with the GPU's own masks; here they only need to catch O(1) mistakes.
      const bool behind_relu = t.name.starts_with("subsampling.conv");
      ExpectClose(t.name + " (rep " + std::to_string(rep) + ")", got, want,
                  behind_relu ? 2e-1 : 5e-2, behind_relu ? 5e-1 : 1e-1, 1e-7);
    }
  }
  // The hook reports every tensor once, in increasing offset order, covering the buffer.
  size_t next = 0;
  ASSERT_EQ(order.size(), 2 * gpu->layout().size());
  for (size_t i = 0; i < order.size(); i += 2) {
    EXPECT_EQ(order[i], next);
    next += order[i + 1];
  }
  EXPECT_EQ(next, gpu->num_parameters());
}

TEST(GpuModel, LossAndEveryGradientMatchReferenceOnTinyPreset) {
  SKIP_WITHOUT_GPU();
  ExpectTinyPresetMatchesReference(reference::Activation::kGelu);
}

TEST(GpuModel, SwishFeedForwardMatchesReference) {
  SKIP_WITHOUT_GPU();
  ExpectTinyPresetMatchesReference(reference::Activation::kSwish);
}

TEST(GpuModel, BadLabelsAndOversizedBatchesAreInvalidArgument) {
  SKIP_WITHOUT_GPU();
  const reference::ModelConfig config = reference::ModelConfig::Tiny(11, 20);
  HostBatch h = MakeBatch();
  std::unique_ptr<CudaModel> gpu;
  ASSERT_OK(CudaModel::Create(config, BatchCapacity(), &gpu));
  ASSERT_OK(gpu->InitParameters(1));
  h.labels[1] = 11;  // == vocab: out of range
  const BatchOnDevice d(h);
  std::vector<float> losses_sync;
  CudaBatch cb = d.batch();
  float loss = 0;
  const Status read = gpu->Forward(cb, {}, &loss);
  EXPECT_TRUE(read.IsInvalidArgument());
  // A trainer reading the flags a step late gets the same error from the copied flags.
  int32_t flags[2] = {0, 0};
  ASSERT_OK(gpu->CopyForwardAsync(flags, &loss));
  ASSERT_OK(gpu->DownloadLosses(&losses_sync));  // waits for the copies
  EXPECT_EQ(CudaModel::ForwardStatus(flags, cb.T, config.vocab).ToString(), read.ToString());
  cb.T = 100;  // more frames than max_frames
  EXPECT_TRUE(gpu->Forward(cb, {}, &loss).IsInvalidArgument());
}

// A training step enqueues its forward, backward and optimizer without waiting between them:
// Forward without a loss pointer only enqueues, and ReadForward gives the same loss afterwards.
// The waits are counted by the SIMT runtime, on this thread.
TEST(GpuModel, ForwardWithoutALossPointerDoesNotWaitAndReadForwardGivesTheLoss) {
  SKIP_WITHOUT_GPU();
  const reference::ModelConfig config = reference::ModelConfig::Tiny(11, 20);
  const HostBatch h = MakeBatch();
  std::unique_ptr<CudaModel> gpu;
  ASSERT_OK(CudaModel::Create(config, BatchCapacity(), &gpu));
  ASSERT_OK(gpu->InitParameters(1));
  const BatchOnDevice d(h);
  const CudaBatch cb = d.batch();
  float waited = 0;
  ASSERT_OK(gpu->Forward(cb, {}, &waited));
#if defined(SLUICE_SIMT_DEVICE)
  const uint64_t before = ::sluice::simt::HostWaits();
#endif
  ASSERT_OK(gpu->Forward(cb, {}, nullptr));
  ASSERT_OK(gpu->ZeroGrad());
  ASSERT_OK(gpu->Backward());
#if defined(SLUICE_SIMT_DEVICE)
  EXPECT_EQ(::sluice::simt::HostWaits(), before) << "the host waited during the step";
#endif
  // The step's flags and loss copied behind it, still without a wait (what the trainer reads a
  // step late), equal what ReadForward gives once the stream is done.
  int32_t flags[2] = {-1, -1};
  float copied = -1;
  ASSERT_OK(gpu->CopyForwardAsync(flags, &copied));
#if defined(SLUICE_SIMT_DEVICE)
  EXPECT_EQ(::sluice::simt::HostWaits(), before) << "the host waited for the step's results";
#endif
  float read = -1;
  ASSERT_OK(gpu->ReadForward(&read));
  EXPECT_EQ(read, waited);
  EXPECT_EQ(copied, waited);
  EXPECT_OK(CudaModel::ForwardStatus(flags, cb.T, config.vocab));
}

// An odd subsampled length (65 frames -> 15) and an odd vocabulary (11): attention pads its
// per-head rows and the head its logit rows to 8, so no GEMM of a step has an operand, row or
// batch stride under 16 bytes (cuBLASLt's tensor-core loads), and none runs the fallback kernel.
TEST(GpuModel, NoGemmOfAStepIsUnderAlignedOnOddLengthsAndVocabulary) {
  SKIP_WITHOUT_GPU();
  const reference::ModelConfig config = reference::ModelConfig::Tiny(11, 20);
  HostBatch h = MakeBatch();
  h.T = 65;
  h.frames[0] = 65;
  ASSERT_EQ(reference::SubsampledLength(h.T) % 2, 1);
  h.features = Random(static_cast<size_t>(h.B) * h.T * h.F, 12, -1, 1);
  std::unique_ptr<CudaModel> gpu;
  ASSERT_OK(CudaModel::Create(config, BatchCapacity(), &gpu));
  ASSERT_OK(gpu->InitParameters(1));
  const BatchOnDevice d(h);
  const CudaBatch cb = d.batch();
  float loss = 0;
  ASSERT_OK(gpu->Forward(cb, {}, &loss));
  ASSERT_OK(gpu->ZeroGrad());
  ASSERT_OK(gpu->Backward());
  EXPECT_TRUE(std::isfinite(loss));
  EXPECT_EQ(gpu->gemm_under_aligned_calls(), 0u);
  EXPECT_EQ(gpu->gemm_fallback_calls(), 0u);
}

}  // namespace
}  // namespace sluice::gpu::model
