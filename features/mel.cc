#include "features/mel.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace sluice::features {
namespace {

double MelScale(double hz) { return 1127.0 * std::log(1.0 + hz / 700.0); }

// The per-bin arithmetic is float, step by step as Kaldi (BaseFloat) and torchaudio (float32
// tensors) do it: the weights then agree to the last bit or so, where a double computation would
// differ from both by ~1e-5 relative, enough to show in the log of quiet bins.
float MelScaleF(float hz) { return 1127.0f * std::log(1.0f + hz / 700.0f); }

}  // namespace

Status MakeMelBanks(const MelBankOptions& opt, float sample_rate, int fft_size, MelBanks* out) {
  const double nyquist = 0.5 * sample_rate;
  const double high = opt.high_freq <= 0 ? nyquist + opt.high_freq : opt.high_freq;
  if (opt.num_bins < 3) {
    return Status::InvalidArgument("num-mel-bins must be at least 3, got " +
                                   std::to_string(opt.num_bins));
  }
  if (opt.low_freq < 0 || opt.low_freq >= nyquist || high <= 0 || high > nyquist ||
      high <= opt.low_freq) {
    return Status::InvalidArgument(
        "bad mel frequency range: low-freq " + std::to_string(opt.low_freq) + " Hz, high-freq " +
        std::to_string(high) + " Hz, Nyquist " + std::to_string(nyquist) + " Hz");
  }
  const int num_fft_bins = fft_size / 2;
  const auto bin_width = static_cast<float>(static_cast<double>(sample_rate) / fft_size);
  // Edges of the triangles in double, as both references compute these scalars.
  const double mel_low = MelScale(opt.low_freq);
  const double mel_high = MelScale(high);
  const auto delta = static_cast<float>((mel_high - mel_low) / (opt.num_bins + 1));
  const auto low = static_cast<float>(mel_low);

  MelBanks banks;
  banks.num_bins = opt.num_bins;
  banks.fft_size = fft_size;
  for (int m = 0; m < opt.num_bins; ++m) {
    const float left = low + static_cast<float>(m) * delta;
    const float center = low + static_cast<float>(m + 1) * delta;
    const float right = low + static_cast<float>(m + 2) * delta;
    int first = -1;
    int last = -1;
    const int offset = static_cast<int>(banks.weights.size());
    for (int k = 0; k < num_fft_bins; ++k) {
      const float mel = MelScaleF(bin_width * static_cast<float>(k));
      const float up = (mel - left) / (center - left);
      const float down = (right - mel) / (right - center);
      const float w = std::min(up, down);
      if (!(w > 0)) continue;
      if (first < 0) first = k;
      // Bins under a triangle are contiguous because the mel scale is monotonic; a zero inside
      // the band cannot happen, so the band is [first, last].
      last = k;
      banks.weights.push_back(w);
    }
    if (first < 0) {
      return Status::InvalidArgument(
          "mel bin " + std::to_string(m) + " of " + std::to_string(opt.num_bins) +
          " covers no FFT bin (FFT size " + std::to_string(fft_size) + "): use fewer mel bins");
    }
    banks.start.push_back(first);
    banks.length.push_back(last - first + 1);
    banks.offset.push_back(offset);
  }
  *out = std::move(banks);
  return Status::OK();
}

}  // namespace sluice::features
