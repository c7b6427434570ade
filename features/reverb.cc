#include "features/reverb.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <string>

#include "base/random.h"

namespace sluice::features {

Status PrepareImpulseResponse(const float* h, size_t length, ImpulseResponse* out) {
  if (length == 0) return Status::InvalidArgument("impulse response: no samples");
  size_t direct = 0;
  for (size_t i = 1; i < length; ++i) {
    if (std::fabs(h[i]) > std::fabs(h[direct])) direct = i;
  }
  if (h[direct] == 0.0f) {
    return Status::InvalidArgument("impulse response of " + std::to_string(length) +
                                   " samples: all zero (a silent clip in the RIR dataset?)");
  }
  const size_t block = std::bit_ceil(length);
  const size_t size = 2 * block;
  const RealFft* fft = RealFft::Get(static_cast<int>(size));
  AlignedBuffer in(size);
  std::copy(h, h + length, in.data());
  out->spectrum.Resize(size + 2);
  fft->Forward(in.data(), out->spectrum.data());
  // The inverse FFT is unnormalised; folding 1 / size into the response saves a pass per block.
  const float scale = 1.0f / static_cast<float>(size);
  for (size_t i = 0; i < size + 2; ++i) out->spectrum.data()[i] *= scale;
  out->length = length;
  out->block = block;
  out->direct = direct;
  return Status::OK();
}

ReverbDraw DrawReverb(const ReverbOptions& opt, uint64_t key, uint64_t num_clips) {
  Rng rng(key);
  ReverbDraw d;
  d.apply = rng.Uniform() < opt.probability && num_clips > 0;
  d.clip = num_clips > 0 ? static_cast<uint64_t>(rng.UniformInt(0, num_clips - 1)) : 0;
  return d;
}

void Reverberate(float* x, size_t n, const ImpulseResponse& h, bool keep_level,
                 ReverbWorkspace* ws) {
  if (n == 0 || h.block == 0) return;
  const size_t b = h.block, size = 2 * b, bins = b + 1;
  const RealFft* fft = RealFft::Get(static_cast<int>(size));
  // Only outputs [direct, direct + n) of the full convolution are kept.
  const size_t keep_end = h.direct + n;
  if (ws->sum.size() < keep_end + size) ws->sum.resize(keep_end + size);
  std::fill_n(ws->sum.begin(), keep_end + size, 0.0f);
  ws->block.Resize(size);
  ws->spectrum.Resize(size + 2);
  float* in = ws->block.data();
  float* spec = ws->spectrum.data();
  const float* hs = h.spectrum.data();
  double energy_in = 0.0;
  for (size_t i = 0; i < n; ++i) energy_in += static_cast<double>(x[i]) * x[i];
  for (size_t at = 0; at < n && at < keep_end; at += b) {
    const size_t len = std::min(b, n - at);
    std::copy(x + at, x + at + len, in);
    std::fill(in + len, in + size, 0.0f);
    fft->Forward(in, spec);
    for (size_t k = 0; k < bins; ++k) {
      const float re = spec[2 * k], im = spec[2 * k + 1];
      const float hr = hs[2 * k], hi = hs[2 * k + 1];
      spec[2 * k] = re * hr - im * hi;
      spec[2 * k + 1] = re * hi + im * hr;
    }
    fft->Inverse(spec, in);
    float* sum = ws->sum.data() + at;
    for (size_t i = 0; i < size; ++i) sum[i] += in[i];
  }
  std::copy_n(ws->sum.data() + h.direct, n, x);
  if (keep_level) {
    double energy_out = 0.0;
    for (size_t i = 0; i < n; ++i) energy_out += static_cast<double>(x[i]) * x[i];
    if (energy_out > 0.0) {
      const auto g = static_cast<float>(std::sqrt(energy_in / energy_out));
      for (size_t i = 0; i < n; ++i) x[i] *= g;
    }
  }
}

}  // namespace sluice::features
