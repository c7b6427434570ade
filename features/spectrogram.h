// DeepSpeech2 spectrogram: |STFT| of a periodic Hamming window, log1p, then per-utterance
// normalisation (deepspeech.pytorch's SpectrogramParser).
//
// Input: mono float samples in [-1, 1] (libsndfile's and soundfile's scale) at
// SpectrogramOptions::sample_rate. Output: frames x Dim() floats, row-major, Dim() =
// n_fft / 2 + 1 (81 at 8 kHz with the 20 ms default window). Frames (frames.h):
//  kCenter (default, torch.stft center=True, reflect padding): 1 + n / hop; 1601 for 16 s at 8 kHz.
//    Before normalisation the values match torch.stft(..., center=True, pad_mode="reflect",
//    window=torch.hamming_window(win)).abs().log1p() to 1e-4 relative.
//  kSnipEdges (Kaldi style): 1 + (n - n_fft) / hop whole frames; 1599 for 16 s at 8 kHz.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/status.h"
#include "features/fft.h"
#include "features/frames.h"
#include "features/spectrogram_options.h"
#include "features/window.h"
#include "features/workspace.h"

namespace sluice::features {

class SpectrogramComputer {
 public:
  static Status Validate(const SpectrogramOptions& opt);
  // Throws std::invalid_argument with Validate()'s message for invalid options.
  explicit SpectrogramComputer(const SpectrogramOptions& opt);

  const SpectrogramOptions& options() const { return opt_; }
  int Dim() const { return n_fft_ / 2 + 1; }
  int WindowLength() const { return window_length_; }  // samples
  int Hop() const { return hop_; }                      // samples
  int FftSize() const { return n_fft_; }
  int64_t NumFrames(size_t num_samples) const;

  // NumFrames(n) x Dim() values into out (resized, capacity reused); returns the frame count.
  // Thread-safe with one Workspace per thread; deterministic.
  int64_t Compute(const float* samples, size_t n, Workspace* ws, std::vector<float>* out) const;
  int64_t Compute(const float* samples, size_t n, Workspace* ws, float* out) const;

 private:
  SpectrogramOptions opt_;
  int window_length_ = 0;
  int hop_ = 0;
  int n_fft_ = 0;
  std::vector<float> window_;  // n_fft_ long: the window centred, zeros around it
  const RealFft* fft_ = nullptr;
};

// In place: (x - mean) / std over all n values (std with n - 1 in the denominator, as torch.std);
// only centred when std is 0 or n < 2. deepspeech.pytorch's per-utterance normalisation.
void NormalizeUtterance(float* x, size_t n);

}  // namespace sluice::features
