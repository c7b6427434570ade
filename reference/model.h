// sluice-train's CTC speech encoder, fp32 on the CPU: the reference for the CUDA trainer and a
// trainer in its own right for the tiny preset. docs/model.md draws it; in short:
//
//   features [B, T, F] -> Conv2d subsampling (3x3/2 conv, ReLU, 3x3/2 conv, ReLU, linear to C;
//   T' = SubsampledLength(T)) + sinusoidal positions -> n_layers pre-LayerNorm encoder layers
//   (x += Dropout(Proj(Attention(LN1(x)))); x += Dropout(FC2(Act(FC1(LN2(x)))))) -> final LN ->
//   linear to vocab -> log_softmax -> CTC (blank 0, zero_infinity) averaged over the batch.
//
// Parameters live in one flat buffer in REVERSE layer order (head, last layer ... first layer,
// subsampling), each block's tensors in the order backward finishes them, so backward fills the
// gradient buffer from offset 0 upward (what comm/gradient_buckets.h wants). ParameterLayout lists
// it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "reference/activation.h"

namespace sluice::reference {

struct ModelConfig {
  int n_mels = 80;        // feature dimension F of the input frames (>= 7, for two 3x3/2 convs)
  int d_model = 256;      // C: width of the encoder, and channels of both convolutions
  int n_heads = 4;        // H: must divide d_model
  int n_layers = 12;      // encoder layers
  int d_ff = 1024;        // feed-forward inner width
  int vocab = 0;          // output classes INCLUDING the blank, which is class 0 (>= 2)
  float dropout = 0.1f;   // residual dropout after attention and feed-forward, training only
  Activation activation = Activation::kGelu;  // Act of the feed-forward blocks: GELU or Swish;
                                              // no parameters, so the layout is the same

  static ModelConfig Tiny(int vocab, int n_mels);   // C 32, 2 heads, 2 layers, d_ff 128
  static ModelConfig Small(int vocab, int n_mels);  // C 256, 4 heads, 12 layers, d_ff 1024
  Status Validate() const;
};

struct ParamTensor {
  std::string name;  // "head.out.weight", "layers.11.fc2.weight", "subsampling.conv1.bias", ...
  size_t offset;     // in floats from the start of the flat buffer
  size_t count;
  bool decay;        // AdamW weight decay applies (matrices and conv kernels; not biases or norms)
};

// Every tensor in buffer order; offsets are contiguous from 0.
std::vector<ParamTensor> ParameterLayout(const ModelConfig& config);

// One padded batch as the loader hands it out (loader/batch.h), features already in Real.
template <typename Real>
struct ModelBatch {
  const Real* features = nullptr;        // [B, T, n_mels], frames past frames[b] ignored
  const int32_t* frames = nullptr;       // [B] valid frames per utterance
  int B = 0, T = 0;
  const int32_t* labels = nullptr;       // [B, S_max] class ids in [1, vocab)
  const int32_t* label_lengths = nullptr;  // [B]
  int S_max = 0;
};

struct StepContext {
  uint64_t seed = 0;      // with step, keys every dropout mask (DropoutKey)
  uint64_t step = 0;
  bool training = false;  // dropout on
};

template <typename Real>
class Model {
 public:
  // config must Validate(); parameters start zeroed until InitParameters.
  explicit Model(const ModelConfig& config);
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const ModelConfig& config() const { return config_; }
  const std::vector<ParamTensor>& layout() const { return layout_; }
  size_t num_parameters() const { return params_.size(); }
  Real* params() { return params_.data(); }
  Real* grads() { return grads_.data(); }
  const ParamTensor* Find(const std::string& name) const;

  // Weights uniform in +-1/sqrt(fan_in) (PyTorch's default bound) from a counter-based hash of
  // (seed, tensor index, element), biases 0, LayerNorm gamma 1 and beta 0.
  void InitParameters(uint64_t seed);

  // Runs the model and the loss: *mean_loss = mean over the batch of each utterance's CTC loss
  // (an impossible utterance counts 0). Keeps the activations and a view of `batch` (which must
  // stay alive) for Backward. InvalidArgument for bad lengths or labels, or a batch with T < 7.
  Status Forward(const ModelBatch<Real>& batch, const StepContext& context, Real* mean_loss);

  void ZeroGrad();
  // Adds d mean_loss / d params into grads() for the last Forward. `ready`, if set, is called
  // with (offset, count) of each parameter tensor as its gradient becomes final, in increasing
  // offset order: the hook for overlapping gradient all-reduce.
  using GradReadyFn = std::function<void(size_t offset, size_t count)>;
  void Backward(const GradReadyFn& ready = nullptr);

  // Of the last Forward: log-probabilities [B, T', vocab], per-utterance lengths after
  // subsampling, and per-utterance losses.
  const Real* log_probs() const;
  int output_frames() const;
  const std::vector<int32_t>& output_lengths() const;
  const std::vector<Real>& losses() const;

 private:
  struct State;
  ModelConfig config_;
  std::vector<ParamTensor> layout_;
  std::vector<Real> params_, grads_;
  std::unique_ptr<State> state_;
};

}  // namespace sluice::reference
