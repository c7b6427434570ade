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

struct AttentionDims {
  int B = 0, T = 0, C = 0, H = 1;
  size_t head_elems() const { return static_cast<size_t>(B) * T * C; }        // q, k, v, y, ...
  size_t score_elems() const { return static_cast<size_t>(B) * H * T * T; }  // probabilities
};

// What the forward keeps for the backward (one set per layer): q, k, v as [B, H, T, hs] bf16
// (head_elems each) and the probabilities [B, H, T, T] (score_elems) in fp32 and bf16.
struct AttentionSaved {
  Bf16 *q = nullptr, *k = nullptr, *v = nullptr;
  float* probs = nullptr;
  Bf16* probs_bf16 = nullptr;
};

// Scratch shared by every layer: scores and ds score_elems; y, dy, dq, dk, dv head_elems.
struct AttentionScratch {
  float* scores = nullptr;  // fp32 scores (forward), dP (backward)
  Bf16* ds = nullptr;       // bf16 d scores, scaled (backward)
  float* y = nullptr;       // fp32 [B, H, T, hs] (forward)
  Bf16* dy = nullptr;       // bf16 [B, H, T, hs] (backward)
  float *dq = nullptr, *dk = nullptr, *dv = nullptr;  // fp32 [B, H, T, hs] (backward)
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
