// CTC loss (Graves et al. 2006) by log-space forward-backward: the exact reference the CUDA
// kernel is tested against. docs/model.md has the recursions and conventions.
//
// Conventions, all row-major:
//   log_probs  [T, V] per utterance, [B, T_max, V] per batch: log_softmax of the logits, so
//              each row sums to 1 in probability space. Only the first input_length rows are read.
//   labels     label ids in [0, V) other than the blank; a batch pads them to [B, S_max].
//   gradient   d loss / d logits, the PRE-softmax scores (softmax(logits) - posterior), which is
//              what the model's backward needs; rows at or past input_length are written as zero.
// An impossible alignment (input_length < label_length + number of adjacent repeats) has
// likelihood 0 and loss +inf; its gradient is written as zeros, never NaN. With zero_infinity
// the loss is 0 too (PyTorch's zero_infinity=True).
//
// Templated on the real type: float is the reference, double is for gradient checks.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"

namespace sluice::reference {

struct CtcOptions {
  int blank = 0;               // class id of the blank; labels must not contain it
  bool zero_infinity = false;  // impossible alignments give loss 0 (and gradient 0) instead of +inf
};

// Smallest input_length for which `labels` has any alignment: one frame per label plus one blank
// between each pair of equal adjacent labels.
int CtcMinInputLength(const int32_t* labels, int label_length);

// One utterance. log_probs holds at least input_length rows of V. *loss = -log p(labels | x).
// grad_logits (may be null) receives input_length rows of V. Allocates its O(T * S) lattice.
// InvalidArgument for negative lengths, V < 1, a blank outside [0, V), or a label outside [0, V)
// or equal to the blank.
template <typename Real>
Status CtcLoss(const Real* log_probs, int input_length, int V, const int32_t* labels,
               int label_length, const CtcOptions& options, Real* loss, Real* grad_logits);

// A padded batch: log_probs [B, T_max, V], labels [B, S_max], input_lengths and label_lengths [B].
// losses[b] is utterance b's loss; grad_logits [B, T_max, V] (may be null) is d(sum_b
// grad_scale[b] * losses[b]) / d logits with grad_scale null meaning all ones (so a mean over the
// batch passes 1/B each). Padding rows get zero gradient. Reuses one lattice workspace.
template <typename Real>
Status CtcLossBatch(const Real* log_probs, int B, int T_max, int V, const int32_t* labels,
                    int S_max, const int32_t* input_lengths, const int32_t* label_lengths,
                    const CtcOptions& options, Real* losses, Real* grad_logits,
                    const Real* grad_scale = nullptr);

}  // namespace sluice::reference
