// The analysis window's type, apart from the windows themselves (window.h), so that the options
// headers (fbank_options.h, spectrogram_options.h) and the SDK that installs them need no more.
#pragma once

#include "../base/fields.h"

namespace sluice::features {

// Kaldi's --window-type values.
enum class WindowType { kPovey, kHamming, kHanning, kRectangular, kBlackman, kSine };

// Names for the options tables (base/fields.h); "hann" reads as hanning.
inline constexpr EnumName<WindowType> kWindowTypeNames[] = {
    {"povey", WindowType::kPovey},
    {"hamming", WindowType::kHamming},
    {"hanning", WindowType::kHanning},
    {"hann", WindowType::kHanning},
    {"rectangular", WindowType::kRectangular},
    {"blackman", WindowType::kBlackman},
    {"sine", WindowType::kSine}};
inline const auto& EnumNames(WindowType) { return kWindowTypeNames; }

}  // namespace sluice::features
