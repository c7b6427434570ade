#include "features/spectrogram.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "features/kernels.h"

namespace sluice::features {

Status SpectrogramComputer::Validate(const SpectrogramOptions& o) {
  auto bad = [](const std::string& what) {
    return Status::InvalidArgument("spectrogram: " + what);
  };
  if (o.sample_rate <= 0) return bad("sample rate must be > 0");
  const long win = std::lround(o.sample_rate * static_cast<double>(o.window_ms) / 1000);
  const long hop = std::lround(o.sample_rate * static_cast<double>(o.hop_ms) / 1000);
  if (!(win >= 2 && win <= (1 << 20))) return bad("window must be 2 to 2^20 samples");
  if (!(hop >= 1 && hop <= (1 << 20))) return bad("hop must be at least one sample");
  if (o.n_fft != 0 && (o.n_fft < win || o.n_fft > (1 << 20))) {
    return bad("n_fft " + std::to_string(o.n_fft) + " is smaller than the window (" +
               std::to_string(win) + " samples)");
  }
  if (o.window != WindowType::kHamming && o.window != WindowType::kHanning &&
      o.window != WindowType::kRectangular) {
    return bad(std::string("window must be hamming, hanning or rectangular, not ") +
               WindowTypeName(o.window));
  }
  if (o.frames == FrameConvention::kKaldiCenter) {
    return bad("frame convention must be center or snip-edges");
  }
  return Status::OK();
}

SpectrogramComputer::SpectrogramComputer(const SpectrogramOptions& opt) : opt_(opt) {
  Status s = Validate(opt);
  if (!s.ok()) throw std::invalid_argument(s.message());
  window_length_ =
      static_cast<int>(std::lround(opt.sample_rate * static_cast<double>(opt.window_ms) / 1000));
  hop_ = static_cast<int>(std::lround(opt.sample_rate * static_cast<double>(opt.hop_ms) / 1000));
  n_fft_ = opt.n_fft == 0 ? window_length_ : opt.n_fft;
  // torch.stft pads a shorter window with zeros on both sides to n_fft, (n_fft - win) / 2 left.
  window_.assign(static_cast<size_t>(n_fft_), 0.0f);
  const std::vector<float> w = PeriodicWindow(opt.window, window_length_);
  const int left = (n_fft_ - window_length_) / 2;
  for (int i = 0; i < window_length_; ++i) window_[left + i] = w[i];
  fft_ = RealFft::Get(n_fft_);
}

int64_t SpectrogramComputer::NumFrames(size_t num_samples) const {
  return features::NumFrames(static_cast<int64_t>(num_samples), n_fft_, hop_, opt_.frames);
}

int64_t SpectrogramComputer::Compute(const float* samples, size_t n, Workspace* ws,
                                     std::vector<float>* out) const {
  out->resize(static_cast<size_t>(NumFrames(n)) * static_cast<size_t>(Dim()));
  return Compute(samples, n, ws, out->data());
}

int64_t SpectrogramComputer::Compute(const float* samples, size_t n, Workspace* ws,
                                     float* out) const {
  const int64_t frames = NumFrames(n);
  if (frames == 0) return 0;
  ws->frame.Resize(static_cast<size_t>(n_fft_));
  ws->fft_in.Resize(static_cast<size_t>(n_fft_));
  ws->fft_out.Resize(static_cast<size_t>(n_fft_ + 2));
  float* frame = ws->frame.data();
  float* fft_in = ws->fft_in.data();
  float* fft_out = ws->fft_out.data();
  const int dim = Dim();
  const auto sn = static_cast<int64_t>(n);
  for (int64_t f = 0; f < frames; ++f) {
    const int64_t start = FirstSample(f, n_fft_, hop_, opt_.frames);
    const float* src = samples + start;
    if (start < 0 || start + n_fft_ > sn) {
      for (int j = 0; j < n_fft_; ++j) frame[j] = samples[MirrorIndex(start + j, sn, false)];
      src = frame;
    }
    kernels::Multiply(src, window_.data(), n_fft_, fft_in);
    fft_->Forward(fft_in, fft_out);
    float* row = out + f * dim;
    if (opt_.power) {
      kernels::PowerSpectrum(fft_out, dim, row);
    } else {
      kernels::MagnitudeSpectrum(fft_out, dim, row);
    }
    if (opt_.log1p) kernels::Log1p(row, dim);
  }
  if (opt_.normalize) NormalizeUtterance(out, static_cast<size_t>(frames) * dim);
  return frames;
}

void NormalizeUtterance(float* x, size_t n) {
  if (n == 0) return;
  // Double accumulators (a 16 s spectrogram has ~130k values, beyond float's exact running sums),
  // in independent lanes so the loops vectorise instead of waiting on one serial add chain.
  const double mean = kernels::SumDouble(x, n) / static_cast<double>(n);
  const double ss = kernels::SumSquaresCentredDouble(x, n, mean);
  const double std = n > 1 ? std::sqrt(ss / static_cast<double>(n - 1)) : 0.0;
  const float m = static_cast<float>(mean);
  const float inv = std > 0 ? static_cast<float>(1.0 / std) : 1.0f;
  for (size_t i = 0; i < n; ++i) x[i] = (x[i] - m) * inv;
}

}  // namespace sluice::features
