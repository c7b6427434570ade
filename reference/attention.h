// Multi-head scaled dot-product self-attention with a key padding mask (the part between the
// qkv projection and the output projection, which are Linear layers).
//   qkv     [B, T, 3C]: columns [0, C) are q, [C, 2C) k, [2C, 3C) v; head h owns columns
//           [h*hs, (h+1)*hs) of each, hs = C / H.
//   lengths [B]: keys j >= lengths[b] are masked (probability exactly 0). Query rows past the
//           length are computed like the others (they only ever see valid keys), so padding never
//           leaks into valid rows; a row with length 0 attends to nothing and outputs 0.
//   att     [B, H, T, T] the softmax probabilities, saved for the backward.
//   out     [B, T, C], heads concatenated.
// Backward adds into dqkv.
#pragma once

#include <cstdint>

namespace sluice::reference {

template <typename Real>
void AttentionForward(Real* out, Real* att, const Real* qkv, const int32_t* lengths, int B, int T,
                      int C, int H);

template <typename Real>
void AttentionBackward(Real* dqkv, const Real* dout, const Real* qkv, const Real* att,
                       const int32_t* lengths, int B, int T, int C, int H);

}  // namespace sluice::reference
