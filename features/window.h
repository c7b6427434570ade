// Analysis windows: Kaldi's symmetric windows for the filterbank and torch's periodic windows
// for the spectrogram.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "features/window_type.h"

namespace sluice::features {

// "povey", "hamming", "hanning" (also "hann"), "rectangular", "blackman", "sine"; false if unknown.
bool ParseWindowType(std::string_view name, WindowType* out);
const char* WindowTypeName(WindowType type);

// Kaldi's window of `length` samples (symmetric: the cosine's period is length - 1), as
// FeatureWindowFunction and torchaudio.compliance.kaldi build it. `blackman_coeff` is Kaldi's
// --blackman-coeff (used by kBlackman only).
std::vector<float> KaldiWindow(WindowType type, int length, float blackman_coeff = 0.42f);

// Periodic window (period = length) as torch.hamming_window / torch.hann_window with
// periodic=True; kRectangular is all ones. Other types fall back to their symmetric form.
std::vector<float> PeriodicWindow(WindowType type, int length);

}  // namespace sluice::features
