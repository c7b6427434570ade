// Kaldi-compatible log-mel filterbank (compute-fbank-feats, torchaudio.compliance.kaldi.fbank).
//
// Input: mono samples at FbankOptions::sample_frequency in Kaldi's scale, i.e. the int16 range
// (multiply libsndfile's [-1, 1] floats by 32768, or use Pcm16ToFloat(..., 1.0f)). With
// dither = 0 the output matches torchaudio.compliance.kaldi.fbank given the same options
// (tests/features/fbank_test.cc). Output: frames x Dim() floats, row-major, each row
// [energy?, log mel bins...] (energy last with htk_compat).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "base/status.h"
#include "features/fbank_options.h"
#include "features/fft.h"
#include "features/mel.h"
#include "features/window.h"
#include "features/workspace.h"

namespace sluice::features {

class FbankComputer {
 public:
  // OK, or InvalidArgument naming the bad option.
  static Status Validate(const FbankOptions& opt);

  // Builds the window and mel tables and plans the FFT. Throws std::invalid_argument with
  // Validate()'s message for invalid options (a programming error: validate user input first).
  explicit FbankComputer(const FbankOptions& opt);

  const FbankOptions& options() const { return opt_; }
  int Dim() const { return opt_.num_mel_bins + (opt_.use_energy ? 1 : 0); }
  int WindowLength() const { return window_length_; }  // samples
  int WindowShift() const { return window_shift_; }    // samples
  int FftSize() const { return fft_size_; }
  int64_t NumFrames(size_t num_samples) const;

  // Computes NumFrames(n) x Dim() features into out (resized; its capacity reused). Thread-safe:
  // many threads may call it at once, each with its own Workspace. `dither_key` seeds the dither
  // (e.g. StreamKey(seed, epoch, record id)); the output is a pure function of (samples, options,
  // dither_key). Returns the number of frames.
  int64_t Compute(const float* samples, size_t n, Workspace* ws, std::vector<float>* out,
                  uint64_t dither_key = 0) const;
  // Same, into caller memory of NumFrames(n) * Dim() floats (e.g. a batch buffer).
  int64_t Compute(const float* samples, size_t n, Workspace* ws, float* out,
                  uint64_t dither_key = 0) const;

 private:
  void PrepareWorkspace(Workspace* ws) const;

  FbankOptions opt_;
  int window_length_ = 0;
  int window_shift_ = 0;
  int fft_size_ = 0;
  std::vector<float> window_;
  MelBanks mel_;
  float log_energy_floor_ = 0;  // log(energy_floor), or -inf when there is none
  const RealFft* fft_ = nullptr;
};

}  // namespace sluice::features
