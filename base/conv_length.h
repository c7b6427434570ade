// The output length of a convolution along one axis, in integers: the one formula that the
// trainer's model (reference/conv2d.h) and the encoder-frame counts (features/encoder_frames.h)
// both use, so the budget a loader plans with cannot drift from what the model computes.
#pragma once

#include <cstdint>

namespace sluice {

// torch.nn.Conv1d's L_out = floor((n + 2 padding - dilation (kernel - 1) - 1) / stride) + 1,
// 0 where the padded input is shorter than the dilated kernel. Arguments: n >= 0, kernel >= 1,
// stride >= 1, padding >= 0, dilation >= 1.
constexpr int64_t ConvOutLength(int64_t n, int64_t kernel, int64_t stride, int64_t padding,
                                int64_t dilation) {
  const int64_t span = n + 2 * padding - dilation * (kernel - 1) - 1;
  return span < 0 ? 0 : span / stride + 1;
}

}  // namespace sluice
