// Multi-head self-attention with a key padding mask on the GPU, mirroring
// reference/attention.h: between the QKV linear and the output projection. The score and value
// products are strided-batched cuBLASLt GEMMs over the B*H heads (bf16 in, fp32 accumulation);
// the masked softmax and its backward are fp32 kernels.
//   qkv     [B, T, 3C] fp32 (the QKV GEMM's output, before its bias; bias [3C] may be null):
//           columns [0, C) q, [C, 2C) k, [2C, 3C) v; head h owns [h*hs, (h+1)*hs) of each.
//   lengths [B] device: keys j >= lengths[b] get probability exactly 0; a row of an utterance
//           with length 0 attends to nothing and outputs 0 (as the reference).
//   out     [B, T, C], heads concatenated: bf16 (the projection's GEMM input), fp32 optional.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/status.h"
#include "gpu/model/device_array.h"
#include "gpu/model/gemm.h"

namespace sluice::gpu::model {

// The per-head tensors are laid out with Tp = T rounded up to 8 rows: [B, H, Tp, hs] and scores
// [B, H, Tp, Tp]. With an odd T the batch strides T*T and T*hs and the score rows would be 2- or
// 4-byte aligned; cuBLASLt's tensor-core kernels load 16 bytes at a time, so such shapes got a
// slow algorithm or none (then gemm.cc's fallback kernel). Even with aligned strides, an extent
// of T rows or columns (odd) made it pick 1-element aligned kernels, several times slower (seen on
// an H200). So the kernels write zeros into the padding of q, k, v, dy, the bf16 probabilities and
// ds, and the GEMMs run over Tp: every extent, leading dimension and batch stride is 16-byte
// aligned whenever hs is a multiple of 8 (both presets), and the padding adds nothing.
struct AttentionDims {
  int B = 0, T = 0, C = 0, H = 1;
  int Tp() const { return (T + 7) / 8 * 8; }
  size_t head_elems() const { return static_cast<size_t>(B) * T * C; }   // [B, T, C] in and out
  size_t saved_elems() const { return static_cast<size_t>(B) * Tp() * C; }  // [B, H, Tp, hs]
  size_t score_elems() const { return static_cast<size_t>(B) * H * Tp() * Tp(); }  // [B, H, Tp, Tp]
};

// What the forward keeps for the backward (one set per layer): q, k, v as [B, H, Tp, hs] bf16
// (saved_elems each) and the probabilities [B, H, Tp, Tp] (score_elems) in fp32 and bf16.
struct AttentionSaved {
  Bf16 *q = nullptr, *k = nullptr, *v = nullptr;
  float* probs = nullptr;
  Bf16* probs_bf16 = nullptr;
};

// Scratch shared by every layer: scores and ds score_elems; y, dy, dq, dk, dv saved_elems.
struct AttentionScratch {
  float* scores = nullptr;  // fp32 scores (forward), dP (backward)
  Bf16* ds = nullptr;       // bf16 d scores, scaled (backward)
  float* y = nullptr;       // fp32 [B, H, Tp, hs] (forward)
  Bf16* dy = nullptr;       // bf16 [B, H, Tp, hs] (backward)
  float *dq = nullptr, *dk = nullptr, *dv = nullptr;  // fp32 [B, H, Tp, hs] (backward)
};

Status AttentionForward(Gemm& gemm, Bf16* out_bf16, float* out_f32, const float* qkv,
                        const float* qkv_bias, const int32_t* lengths, const AttentionDims& d,
                        const AttentionSaved& saved, const AttentionScratch& scratch, void* stream);

// dqkv [B, T, 3C] WRITTEN as fp32 (the bias gradient reads it) and bf16 (the GEMM input); either
// may be null. dout [B, T, C] fp32.
Status AttentionBackward(Gemm& gemm, float* dqkv, Bf16* dqkv_bf16, const float* dout,
                         const int32_t* lengths, const AttentionDims& d,
                         const AttentionSaved& saved, const AttentionScratch& scratch,
                         void* stream);

}  // namespace sluice::gpu::model
