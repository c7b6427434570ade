// Where frames start, as an option value; the arithmetic of each convention is frames.h's. Apart
// from it so that spectrogram_options.h (installed with the SDK) needs no more.
#pragma once

#include "../base/fields.h"

namespace sluice::features {

enum class FrameConvention {
  kSnipEdges,    // Kaldi --snip-edges=true
  kKaldiCenter,  // Kaldi --snip-edges=false
  kCenter,       // torch.stft center=True, reflect padding
};

// Names for the options tables (base/fields.h).
inline constexpr EnumName<FrameConvention> kFrameConventionNames[] = {
    {"snip_edges", FrameConvention::kSnipEdges},
    {"kaldi_center", FrameConvention::kKaldiCenter},
    {"center", FrameConvention::kCenter}};
inline const auto& EnumNames(FrameConvention) { return kFrameConventionNames; }

}  // namespace sluice::features
