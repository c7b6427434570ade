#include "trainer/row_batch.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace sluice::train {

Status RowBatch::Fill(const loader::Batch& batch, const int* rows, int n, int vocab) {
  const float* src = batch.features_f32();
  if (src == nullptr) return Status::InvalidArgument("trainer: batch features are not float32");
  const int64_t T_in = batch.frames();
  F_ = batch.dim();
  B_ = n;
  T_ = 0;
  S_max_ = 0;
  for (int i = 0; i < n; ++i) {
    T_ = std::max<int>(T_, batch.lengths()[rows[i]]);
    S_max_ = std::max<int>(S_max_, batch.token_lengths()[rows[i]]);
  }
  // The model's two stride-2 convolutions need 7 frames; shorter rows produce no output frames
  // and count as impossible alignments (loss 0 under zero_infinity).
  T_ = std::max(T_, 7);
  S_max_ = std::max(S_max_, 1);
  features_.assign(static_cast<size_t>(B_) * T_ * F_, 0.0f);
  frames_.resize(B_);
  labels_.assign(static_cast<size_t>(B_) * S_max_, 0);
  label_lengths_.resize(B_);
  for (int i = 0; i < n; ++i) {
    const int r = rows[i];
    const int frames = batch.lengths()[r];
    frames_[i] = frames;
    std::memcpy(&features_[static_cast<size_t>(i) * T_ * F_],
                src + static_cast<size_t>(r) * T_in * F_, sizeof(float) * frames * F_);
    const int L = batch.token_lengths()[r];
    label_lengths_[i] = L;
    const int32_t* tokens = batch.tokens() + static_cast<size_t>(r) * batch.max_tokens();
    for (int k = 0; k < L; ++k) {
      if (tokens[k] < 1 || tokens[k] >= vocab)
        return Status::InvalidArgument(
            "record '" + std::string(batch.keys()[r]) + "': token id " + std::to_string(tokens[k]) +
            " outside the model's classes [1, " + std::to_string(vocab) + ")");
      labels_[static_cast<size_t>(i) * S_max_ + k] = tokens[k];
    }
  }
  return Status::OK();
}

reference::ModelBatch<float> RowBatch::View() const {
  return {features_.data(), frames_.data(), B_, T_, labels_.data(), label_lengths_.data(), S_max_};
}

}  // namespace sluice::train
