// The 3x3, stride 2, unpadded 2-D convolution of Conv2d subsampling (ESPnet's and NeMo's
// Conv2dSubsampling: two of them with ReLU cut time and frequency by 4).
//   in [B, Cin, H, W], weight [Cout, Cin, 3, 3], bias [Cout], out [B, Cout, Ho, Wo],
//   Ho = Conv2dOutSize(H), Wo = Conv2dOutSize(W).
// Backward adds into din (may be null: the first conv needs no input gradient), dweight, dbias.
#pragma once

#include "base/conv_length.h"

namespace sluice::reference {

// floor((n - 3) / 2) + 1 for n >= 3, else 0 (equal to floor((n - 1) / 2)); the formula is
// base/conv_length.h's, which the encoder-frame counts (features/encoder_frames.h) share.
constexpr int Conv2dOutSize(int n) {
  return static_cast<int>(ConvOutLength(n, /*kernel=*/3, /*stride=*/2, /*padding=*/0, 1));
}

// Frames after both convolutions: ((n - 1) / 2 - 1) / 2 in integer arithmetic, 0 below 7 frames.
// Output frame t sees input frames [4t, 4t + 6], so it is valid iff 4t + 6 < n.
constexpr int SubsampledLength(int n) { return Conv2dOutSize(Conv2dOutSize(n)); }

template <typename Real>
void Conv2dForward(Real* out, const Real* in, const Real* weight, const Real* bias, int B, int Cin,
                   int H, int W, int Cout);

template <typename Real>
void Conv2dBackward(Real* din, Real* dweight, Real* dbias, const Real* dout, const Real* in,
                    const Real* weight, int B, int Cin, int H, int W, int Cout);

}  // namespace sluice::reference
