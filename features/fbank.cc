#include "features/fbank.h"

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "features/dither.h"
#include "features/fast_math.h"
#include "features/frames.h"
#include "features/kernels.h"

namespace sluice::features {

namespace {

Status Bad(const std::string& what) { return Status::InvalidArgument("fbank: " + what); }

// Every option but the mel banks', which MakeMelBanks checks as it builds them.
Status ValidateFraming(const FbankOptions& o) {
  if (!(o.sample_frequency > 0)) return Bad("sample-frequency must be > 0");
  const double length = o.sample_frequency * 0.001 * o.frame_length_ms;
  const double shift = o.sample_frequency * 0.001 * o.frame_shift_ms;
  if (!(length >= 2) || length > (1 << 20)) {
    return Bad("frame-length " + std::to_string(o.frame_length_ms) + " ms gives " +
               std::to_string(static_cast<int>(length)) + " samples; need 2 to 2^20");
  }
  if (!(shift >= 1) || shift > (1 << 20)) {
    return Bad("frame-shift " + std::to_string(o.frame_shift_ms) + " ms is less than one sample");
  }
  if (!(o.dither >= 0) || !std::isfinite(o.dither)) return Bad("dither must be >= 0");
  if (!(o.preemphasis_coefficient >= 0 && o.preemphasis_coefficient <= 1)) {
    return Bad("preemphasis-coefficient must be in [0, 1]");
  }
  if (!(o.energy_floor >= 0)) return Bad("energy-floor must be >= 0");
  return Status::OK();
}

// The FFT size of `o`'s frames: Kaldi's window length in samples, or the power of two above.
int PaddedFftSize(const FbankOptions& o) {
  const int length = static_cast<int>(o.sample_frequency * 0.001 * o.frame_length_ms);
  return o.round_to_power_of_two ? static_cast<int>(std::bit_ceil(static_cast<unsigned>(length)))
                                 : length;
}

Status BuildMelBanks(const FbankOptions& o, MelBanks* banks) {
  const Status s = MakeMelBanks({o.num_mel_bins, o.low_freq, o.high_freq}, o.sample_frequency,
                                PaddedFftSize(o), banks);
  return s.ok() ? s : Bad(s.message());
}

}  // namespace

Status FbankComputer::Validate(const FbankOptions& o) {
  SLUICE_RETURN_IF_ERROR(ValidateFraming(o));
  MelBanks banks;
  return BuildMelBanks(o, &banks);
}

// Checks the options as Validate does, building the mel banks once (they are most of the cost).
FbankComputer::FbankComputer(const FbankOptions& opt) : opt_(opt) {
  Status s = ValidateFraming(opt);
  if (s.ok()) s = BuildMelBanks(opt, &mel_);
  if (!s.ok()) throw std::invalid_argument(s.message());
  // Kaldi's sample counts: truncation of rate * ms / 1000, computed in double as Kaldi does.
  window_length_ = static_cast<int>(opt.sample_frequency * 0.001 * opt.frame_length_ms);
  window_shift_ = static_cast<int>(opt.sample_frequency * 0.001 * opt.frame_shift_ms);
  fft_size_ = PaddedFftSize(opt);
  window_ = KaldiWindow(opt.window_type, window_length_, opt.blackman_coeff);
  log_energy_floor_ =
      opt.energy_floor > 0 ? std::log(opt.energy_floor) : -std::numeric_limits<float>::infinity();
  fft_ = RealFft::Get(fft_size_);
}

int64_t FbankComputer::NumFrames(size_t num_samples) const {
  return features::NumFrames(
      static_cast<int64_t>(num_samples), window_length_, window_shift_,
      opt_.snip_edges ? FrameConvention::kSnipEdges : FrameConvention::kKaldiCenter);
}

void FbankComputer::PrepareWorkspace(Workspace* ws) const {
  // Reallocates only when this computer needs more than the workspace has seen; zero-filling
  // leaves fft_in's padding (past the window) zero for every frame, as FFTW preserves its input.
  ws->frame.Resize(static_cast<size_t>(window_length_));
  ws->fft_in.Resize(static_cast<size_t>(fft_size_));
  ws->fft_out.Resize(static_cast<size_t>(fft_size_ + 2));
  ws->spectrum.Resize(static_cast<size_t>(fft_size_ / 2 + 1));
}

int64_t FbankComputer::Compute(const float* samples, size_t n, Workspace* ws,
                               std::vector<float>* out, uint64_t dither_key) const {
  out->resize(static_cast<size_t>(NumFrames(n)) * static_cast<size_t>(Dim()));
  return Compute(samples, n, ws, out->data(), dither_key);
}

int64_t FbankComputer::Compute(const float* samples, size_t n, Workspace* ws, float* out,
                               uint64_t dither_key) const {
  const int64_t frames = NumFrames(n);
  if (frames == 0) return 0;
  PrepareWorkspace(ws);
  const FrameConvention convention =
      opt_.snip_edges ? FrameConvention::kSnipEdges : FrameConvention::kKaldiCenter;
  const int len = window_length_;
  const int dim = Dim();
  const int num_bins = opt_.num_mel_bins;
  const int half = fft_size_ / 2;  // Kaldi's mel banks stop below the Nyquist bin
  const bool energy = opt_.use_energy;
  const int mel_col = energy && !opt_.htk_compat ? 1 : 0;
  const int energy_col = opt_.htk_compat ? num_bins : 0;
  const float coeff = opt_.preemphasis_coefficient;
  const float eps = FLT_EPSILON;  // Kaldi's floor before every log
  float* frame = ws->frame.data();
  float* fft_in = ws->fft_in.data();
  float* fft_out = ws->fft_out.data();
  float* spectrum = ws->spectrum.data();
  const auto sn = static_cast<int64_t>(n);

  for (int64_t f = 0; f < frames; ++f) {
    const int64_t start = FirstSample(f, len, window_shift_, convention);
    const float* src = samples + start;
    if (start < 0 || start + len > sn) {
      for (int j = 0; j < len; ++j) frame[j] = samples[MirrorIndex(start + j, sn, true)];
      src = frame;
    }
    float mean = 0;
    if (opt_.dither != 0) {
      // Noise and the frame sum in one pass; the sum is only wanted for the DC offset.
      const float sum =
          kernels::AddDitherAndSum(src, len, DitherFrameKey(dither_key, f), opt_.dither, frame);
      src = frame;
      if (opt_.remove_dc_offset) mean = sum / static_cast<float>(len);
    } else if (opt_.remove_dc_offset) {
      mean = kernels::Sum(src, len) / static_cast<float>(len);
    }
    float frame_energy = 0;
    if (energy && opt_.raw_energy) frame_energy = kernels::SumSquaresCentred(src, len, mean);
    kernels::PreemphasiseAndWindow(src, len, mean, coeff, window_.data(), fft_in);
    if (energy && !opt_.raw_energy) frame_energy = kernels::SumSquaresCentred(fft_in, len, 0);

    fft_->Forward(fft_in, fft_out);
    if (opt_.use_power) {
      kernels::PowerSpectrum(fft_out, half, spectrum);
    } else {
      kernels::MagnitudeSpectrum(fft_out, half, spectrum);
    }
    float* row = out + f * dim;
    float* mel = row + mel_col;
    kernels::MelProject(spectrum, mel_.start.data(), mel_.length.data(), mel_.offset.data(),
                        mel_.weights.data(), num_bins, mel);
    if (opt_.use_log_fbank) kernels::LogFloored(mel, num_bins, eps);
    if (energy) {
      float e = internal::LogPositive(std::max(frame_energy, eps));
      row[energy_col] = std::max(e, log_energy_floor_);
    }
  }
  return frames;
}

}  // namespace sluice::features
