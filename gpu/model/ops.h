// The CUDA model's pointwise, row and reduction kernels (forward and backward), each mirroring an
// op of reference/ (docs/model.md). CUDA-free declarations: device pointers, `void* stream`;
// every function only enqueues work and returns a Status naming file:line on a launch error.
//
// Precision: activations and gradients are fp32; tensors a GEMM reads are also written as bf16
// (the `*_bf16` outputs). Statistics (LayerNorm mean/var, softmax max/sum, bias and gamma
// reductions) accumulate in fp32 in a fixed order, so every kernel is deterministic: no atomics.
//
// Unlike reference/ (whose backwards all add), a kernel here WRITES its outputs unless the
// comment says "adds": parameter gradients always add (the caller zeroes them once per step), and
// so does the residual stream's gradient in LayerNormBackward.
//
// One header for all of them; the definitions are one .cu per family, as in reference/:
// linear.cu, reduce.cu, layernorm.cu, activation.cu, dropout.cu, softmax.cu, conv2d.cu,
// positions.cu (column_reduce.cuh is the reduction reduce.cu and layernorm.cu share).
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/status.h"
#include "gpu/model/device_array.h"
#include "reference/activation.h"
#include "reference/dropout.h"

namespace sluice::gpu::model {

// --- conversions -------------------------------------------------------------------------------
Status CastToBf16(Bf16* out, const float* in, size_t n, void* stream);  // round to nearest even
// in [rows, cols] packed -> out's rows, out_ld >= cols apart (a GEMM operand whose rows are padded
// to 16 bytes); the padding columns are not written.
Status CastRowsToBf16(Bf16* out, int64_t out_ld, const float* in, int rows, int cols,
                      void* stream);
// out [rows, b, a] = in [rows, a, b] with the inner two axes swapped, as bf16: the copy of a weight
// whose GEMM reads them in the other order (conv2's [Cout, Cin, 9] as [Cout, 9, Cin]).
Status CastToBf16SwapInner(Bf16* out, const float* in, int rows, int a, int b, void* stream);

// --- reductions over rows ----------------------------------------------------------------------
// Floats of scratch the column reductions below need for N rows of C columns.
size_t ColumnSumScratch(int N, int C);
// dst[c] += sum_n in[n * C + c] (a bias gradient). `scratch`: ColumnSumScratch(N, C) floats.
Status ColumnSumAdd(float* dst, const float* in, int N, int C, float* scratch, void* stream);

// --- Linear pieces (the GEMMs are Gemm::Run) ----------------------------------------------------
// dst[i] += src[i] (a weight gradient computed into aligned scratch, added to the flat buffer).
Status AddTo(float* dst, const float* src, size_t n, void* stream);
// dst [rows, a, b] += src [rows, b, a] with the inner two axes swapped back: the gradient of a
// weight that CastToBf16SwapInner copies, computed in the GEMM's order.
Status AddToSwapInner(float* dst, const float* src, int rows, int a, int b, void* stream);
// x[n, c] += bias[c] over [N, C]; also writes the bf16 copy when x_bf16 is not null.
Status AddBias(float* x, Bf16* x_bf16, const float* bias, int N, int C, void* stream);

// --- LayerNorm (biased variance, eps reference::kLayerNormEps, fp32 statistics) ---------------
// out_bf16 [N, C] (the next GEMM's input) and optionally out_f32; mean, rstd [N] for the backward.
Status LayerNormForward(Bf16* out_bf16, float* out_f32, float* mean, float* rstd, const float* in,
                        const float* gamma, const float* beta, int N, int C, void* stream);
// din ADDS (it is the residual stream's gradient); dgamma, dbeta add. scratch:
// ColumnSumScratch(N, C) floats.
Status LayerNormBackward(float* din, float* dgamma, float* dbeta, const float* dout,
                         const float* in, const float* gamma, const float* mean, const float* rstd,
                         int N, int C, float* scratch, void* stream);

// --- Feed-forward activation: GELU (exact erf form) or Swish, as reference/activation.h --------
// pre[n, c] += bias[c] (kept, fp32, for the backward), act_bf16 = act(pre) (the FC2 input);
// act_f32 optional. bias may be null. Evaluated in double like the reference, rounded once.
Status BiasActivationForward(reference::Activation act, float* pre, Bf16* act_bf16, float* act_f32,
                             const float* bias, int N, int C, void* stream);
// dpre = dact * act'(pre), written as fp32 and bf16 (either may be null).
Status ActivationBackward(reference::Activation act, float* dpre, Bf16* dpre_bf16,
                          const float* dact, const float* pre, size_t n, void* stream);

// --- Dropout (reference/dropout.h's counter-based hash, bit for bit) ---------------------------
// out = keep(i) ? in * (1 / (1 - p)) : 0 over n values; p == 0 copies. out may alias in.
Status DropoutForward(float* out, const float* in, size_t n, float p,
                      const reference::DropoutKey& key, void* stream);
// The residual branch: out[n, c] = resid[n, c] + Dropout(in[n, c] + bias[c]) over [N, C], the
// dropout index being n * C + c. out may alias resid (not in). bias may be null.
Status BiasDropoutResidual(float* out, const float* in, const float* bias, const float* resid,
                           int N, int C, float p, const reference::DropoutKey& key, void* stream);
// din = keep(i) ? dout / (1 - p) : 0, as fp32 and bf16 (either may be null).
Status DropoutBackward(float* din, Bf16* din_bf16, const float* dout, size_t n, float p,
                       const reference::DropoutKey& key, void* stream);

// --- log_softmax over rows of V -----------------------------------------------------------------
// out[n, :] = in[n, :] + bias - logsumexp(in[n, :] + bias); bias may be null. fp32 throughout.
// in's rows are in_ld >= V apart (the head GEMM's padded output), out is packed [N, V].
Status BiasLogSoftmaxForward(float* out, const float* in, int64_t in_ld, const float* bias, int N,
                             int V,
                             void* stream);

// --- Conv2d subsampling -------------------------------------------------------------------------
// The first conv (1 -> C channels, 3x3 stride 2, no padding) + bias + ReLU is never stored: it is
// computed (fp32) inside the second conv's im2col, and again for its ReLU mask in the backward.
// col [(b, t, f), (kh, kw, ci)] = bf16(ReLU(conv1(features))[b, ci, 2t + kh, 2f + kw]) from the
// features [B, T, F] (the loader's layout, read as [B, 1, T, F]): [B * T2 * F2, 9 * C], taps
// before channels, so conv2 = col W'^T with W' conv2's weight [Cout, C, 3, 3] read as
// [Cout, 3, 3, C] (CastToBf16SwapInner).
Status Conv1Im2Col(Bf16* col, const float* features, const float* weight, const float* bias, int B,
                   int T, int F, int C, void* stream);
// Doubles of scratch Conv1Backward needs at these sizes.
size_t Conv1BackwardScratch(int B, int T, int F, int C);
// conv1's dweight [C, 9] and dbias [C] add, from the conv2 GEMM's input gradient dcol (in
// Conv1Im2Col's layout): col2im, the ReLU mask recomputed from features, weight and bias, and the
// products with the inputs, in one pass. No input gradient (the features need none).
// Deterministic: fixed chunks summed in double, then added in chunk order.
Status Conv1Backward(float* dweight, float* dbias, const float* dcol, const float* features,
                     const float* weight, const float* bias, double* scratch, int B, int T, int F,
                     int C, void* stream);
// The conv2 GEMM's output [B, Ho, Wo, C] + bias, ReLU, and the transpose to the subsampling
// linear's input [B, Ho, C, Wo] (channel-major, then frequency), as fp32 (kept for the ReLU
// mask) and bf16 (the GEMM input).
Status Conv2Epilogue(float* out, Bf16* out_bf16, const float* gemm_out, const float* bias, int B,
                     int C, int Ho, int Wo, void* stream);
// The adjoint of the transpose and ReLU: dgemm [B, Ho, Wo, C] from dout [B, Ho, C, Wo] and the
// epilogue's fp32 output (mask); fp32 (bias gradient) and bf16 (GEMM input).
Status Conv2EpilogueBackward(float* dgemm, Bf16* dgemm_bf16, const float* dout, const float* out,
                             int B, int C, int Ho, int Wo, void* stream);

// --- sinusoidal positions
// ------------------------------------------------------------------------- x[b, t, c] += bias[c] +
// pe(t, c), pe computed in double as the reference does. bias may be null.
Status AddBiasPositions(float* x, const float* bias, int B, int T, int C, void* stream);

// --- small helpers ------------------------------------------------------------------------------
// out_len[b] = reference::SubsampledLength(frames[b]); *bad = b + 1 for the first b whose frames
// are outside [0, T] (else untouched: the caller zeroes it).
Status SubsampledLengths(int32_t* out_len, int32_t* bad, const int32_t* frames, int B, int T,
                         void* stream);
// out[0] = sum_b in[b] / B in double, in a fixed order (the batch's mean loss).
Status MeanOf(float* out, const float* in, int B, void* stream);

}  // namespace sluice::gpu::model
