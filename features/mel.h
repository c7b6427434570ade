// Kaldi's triangular mel filterbank, stored as one contiguous band of FFT bins per mel bin.
#pragma once

#include <vector>

#include "base/status.h"

namespace sluice::features {

struct MelBankOptions {
  int num_bins = 80;       // mel bins (Kaldi's --num-mel-bins; Kaldi's own default is 23)
  float low_freq = 20;     // Hz, lower edge of the first triangle (--low-freq)
  float high_freq = 0;     // Hz, upper edge of the last triangle; <= 0 means Nyquist + high_freq
};

// Weights of mel bin m: weights[offset[m] .. offset[m] + length[m]) applied to the FFT bins
// start[m] .. start[m] + length[m]. Triangles in the mel domain (mel = 1127 ln(1 + f / 700)),
// evenly spaced between low and high freq, over FFT bins 0 .. fft_size / 2 - 1 (Kaldi leaves
// out the Nyquist bin).
struct MelBanks {
  int num_bins = 0;
  int fft_size = 0;
  std::vector<int> start;
  std::vector<int> length;
  std::vector<int> offset;
  std::vector<float> weights;
};

// InvalidArgument for frequencies outside (0, Nyquist], low >= high, or num_bins < 3 (Kaldi's
// limit), or a bin with no FFT bin under it (too many bins for this FFT size).
Status MakeMelBanks(const MelBankOptions& opt, float sample_rate, int fft_size, MelBanks* out);

}  // namespace sluice::features
