// Where frames start: the two conventions every feature here offers (docs/features.md).
//
//  snip_edges (Kaldi's --snip-edges=true): frame f covers samples [f * shift, f * shift + length);
//    only whole frames inside the signal, 1 + (n - length) / shift of them (0 if n < length).
//  Kaldi, --snip-edges=false: (n + shift / 2) / shift frames, frame f centred on
//    f * shift + shift / 2; samples outside the signal mirror it including the edge sample
//    (x[-1] = x[0]), as Kaldi and torchaudio.compliance.kaldi do.
//  center (torch.stft center=True, pad_mode="reflect"): 1 + n / shift frames, frame f covers
//    [f * shift - length / 2, ...) of the signal reflected without repeating the edge
//    (x[-1] = x[1]).
#pragma once

#include <cstdint>

#include "features/frame_convention.h"

namespace sluice::features {

// Number of frames of `length` samples every `shift` samples over n samples.
int64_t NumFrames(int64_t n, int length, int shift, FrameConvention convention);

// Index, in the signal, of the first sample of frame f (may be negative or run past the end
// outside kSnipEdges).
int64_t FirstSample(int64_t frame, int length, int shift, FrameConvention convention);

// Maps a possibly out-of-range index into [0, n) by mirroring: with `repeat_edge`, Kaldi's rule
// (-1 -> 0, n -> n - 1), else numpy/torch "reflect" (-1 -> 1, n -> n - 2). Folds as often as
// needed, so any n >= 1 works.
int64_t MirrorIndex(int64_t i, int64_t n, bool repeat_edge);

}  // namespace sluice::features
