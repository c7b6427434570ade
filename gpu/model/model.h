// sluice-train's CTC encoder on one GPU: reference::Model's forward and backward with bf16 GEMMs
// (cuBLASLt, fp32 accumulation), fp32 master weights, activations and gradients, and the same
// flat parameter layout (reference::ParameterLayout: reverse layer order, so Backward finishes
// the gradient buffer from offset 0 upward). docs/model.md ("CUDA implementation") lists the
// precision of each op. CUDA-free header: buffers are device pointers, the stream a void*.
//
// Every buffer is allocated in Create for the largest batch (max_batch x max_frames, max_labels),
// so steady-state steps allocate nothing. All work is enqueued on options.stream; Forward waits
// for it (it returns the loss to the host), Backward does not.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "base/status.h"
#include "reference/model.h"

namespace sluice::gpu::model {

// One padded batch in device memory (the loader's layout, loader/batch.h).
struct CudaBatch {
  const float* features = nullptr;         // [B, T, n_mels] fp32, frames past frames[b] ignored
  const int32_t* frames = nullptr;         // [B] valid frames per utterance
  const int32_t* labels =
      nullptr;  // [B, S_max] class ids in [1, vocab): the token ids as stored (blank is 0)
  const int32_t* label_lengths = nullptr;  // [B]
  int B = 0, T = 0, S_max = 0;             // host-side dimensions
};

struct CudaModelOptions {
  int max_batch = 0;   // largest B Forward accepts
  int max_frames = 0;  // largest padded T (>= 7)
  int max_labels = 0;  // largest S_max
  size_t gemm_workspace_bytes = size_t{32} << 20;  // cuBLASLt scratch
  void* stream = nullptr;  // every kernel runs here (nullptr: the legacy default stream)
};

class CudaModel {
 public:
  // config must Validate(); parameters start zeroed until InitParameters or UploadParameters.
  static Status Create(const reference::ModelConfig& config, const CudaModelOptions& options,
                       std::unique_ptr<CudaModel>* out);
  ~CudaModel();
  CudaModel(const CudaModel&) = delete;
  CudaModel& operator=(const CudaModel&) = delete;

  const reference::ModelConfig& config() const;
  const std::vector<reference::ParamTensor>& layout() const;
  size_t num_parameters() const;
  float* params();  // device, fp32 master weights, reference layout
  float* grads();   // device, fp32
  void* stream() const;

  // reference::Model::InitParameters's values (computed on the host, uploaded).
  Status InitParameters(uint64_t seed);
  Status UploadParameters(const float* host);  // num_parameters() floats; waits for the copy
  Status DownloadParameters(float* host);
  Status DownloadGrads(float* host);

  // Runs the model and the loss; *mean_loss is the mean over the batch of each utterance's CTC
  // loss (impossible ones count 0), as reference::Model::Forward. Casts the master weights to
  // bf16 first, so parameters changed since the last call are used. InvalidArgument for a batch
  // larger than the options, T < 7, frames outside [0, T], label lengths outside [0, S_max] or
  // labels outside [1, vocab) (the last three are detected on the device). Synchronises the stream.
  // With mean_loss == nullptr it only enqueues (the host checks nothing on the device's word and
  // does not wait), so a training step can enqueue Backward and the optimizer while the GPU runs
  // the forward; ReadForward then waits and gives the loss and those errors.
  Status Forward(const CudaBatch& batch, const reference::StepContext& context, float* mean_loss);
  // The last Forward's mean loss, or its batch's error found on the device. Synchronises.
  Status ReadForward(float* mean_loss);
  // ReadForward without the wait: enqueues on stream() the copies of the last Forward's two
  // device flags and mean loss into `flags` [2] and `*mean_loss` (pinned host memory, so that the
  // copies stay asynchronous). Once an event recorded after them has completed,
  // ForwardStatus(flags, T, vocab) gives the errors ReadForward would (T: that batch's frames).
  Status CopyForwardAsync(int32_t* flags, float* mean_loss);
  static Status ForwardStatus(const int32_t* flags, int frames, int vocab);

  Status ZeroGrad();  // enqueued
  // Adds d mean_loss / d params into grads() for the last Forward (whose batch must still be
  // alive: the first convolution's weight gradient reads the features). `ready(offset, count)` is
  // called on the host for each parameter tensor, in increasing offset order, right after the
  // work that finishes its gradient has been ENQUEUED on stream(): record an event on stream()
  // there (or enqueue the all-reduce on it) before reading the range. Does not synchronise.
  using GradReadyFn = std::function<void(size_t offset, size_t count)>;
  Status Backward(const GradReadyFn& ready = nullptr);

  // Of the last Forward. log_probs: device [B, T', vocab]; the downloads synchronise.
  const float* log_probs() const;
  // The GEMM calls so far that ran the fallback kernel, and those with operands aligned to fewer
  // than 16 bytes (gpu/model/gemm.h).
  size_t gemm_fallback_calls() const;
  size_t gemm_under_aligned_calls() const;
  int output_frames() const;
  Status DownloadLogProbs(std::vector<float>* out);
  Status DownloadLosses(std::vector<float>* out);
  Status DownloadOutputLengths(std::vector<int32_t>* out);

 private:
  struct State;
  explicit CudaModel(std::unique_ptr<State> state);
  std::unique_ptr<State> s_;
};

}  // namespace sluice::gpu::model
