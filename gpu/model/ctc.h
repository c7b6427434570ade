// CTC loss on the GPU (blank 0): log-space forward-backward, one thread block per utterance, the
// lattice in double like reference/ctc.cc (docs/model.md has the recursions). Reads the
// log-probabilities (log_softmax of the logits) and writes the gradient with respect to the
// PRE-softmax logits, softmax - posterior, scaled by grad_scale (the model passes 1/B).
// An impossible alignment (input shorter than CtcMinInputLength) has loss +inf, or 0 with
// zero_infinity, and an all-zero gradient: no NaN anywhere.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/status.h"

namespace sluice::gpu::model {

// Doubles of lattice workspace for a padded batch (alpha and beta, [B, T_max, 2 S_max + 1] each).
size_t CtcWorkspaceElems(int B, int T_max, int S_max);

// log_probs [B, T_max, V] fp32; labels [B, S_max]; input_lengths, label_lengths [B] (all device).
// losses [B] fp32; grad_logits [B, T_max, V] (may be null) is written in full, rows at or past
// input_lengths[b] zero. `bad` (device int, may be null): set to b + 1 for an utterance with a
// length outside [0, T_max] / [0, S_max] or a label outside [1, V); that utterance gets loss 0
// and zero gradient, and the caller reports InvalidArgument (the reference's behaviour, checked
// on the device because the lengths and labels live there).
Status CtcLossBatch(const float* log_probs, int B, int T_max, int V, const int32_t* labels,
                    int S_max, const int32_t* input_lengths, const int32_t* label_lengths,
                    bool zero_infinity, float grad_scale, float* losses, float* grad_logits,
                    double* workspace, int32_t* bad, void* stream);

}  // namespace sluice::gpu::model
