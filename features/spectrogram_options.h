// SpectrogramOptions: what the DeepSpeech2 spectrogram (spectrogram.h) computes, and its options
// table. Apart from the computer so that the loader's options (loader/options.h), and the SDK
// that installs them, reach the options alone, not the FFT and window code.
#pragma once

#include "../base/fields.h"
#include "../features/frame_convention.h"
#include "../features/window_type.h"

namespace sluice::features {

struct SpectrogramOptions {
  int sample_rate = 8000;  // Hz, rate of the input samples
  float window_ms = 20;    // window length (ms); samples = round(rate * ms / 1000)
  float hop_ms = 10;       // hop between frames (ms)
  int n_fft = 0;           // FFT size (samples); 0 = the window length.
                           // Larger: the window sits centred in it, as torch.stft
  WindowType window =
      WindowType::kHamming;  // periodic (torch's periodic=True); hamming/hanning/rectangular
  FrameConvention frames = FrameConvention::kCenter;  // kCenter or kSnipEdges
  bool power = false;                                 // |X|^2 instead of |X|
  bool log1p = true;                                  // log(1 + value)
  bool normalize = true;  // per utterance: (x - mean) / std over all values
                          // (std with n - 1, as torch; skipped when std == 0)
};

// SpectrogramOptions' table (base/fields.h). Window length, hop, window and frames are flags
// shared with fbank (tools/common/feature_options.h); the rate is the dataset's.
template <OptionsOf<SpectrogramOptions> O, class V>
void VisitFields(O& o, V&& v) {
  v(FieldInfo{"sample_rate", nullptr, "rate of the input samples (Hz)", Affects::kWhat, 1},
    o.sample_rate);
  v(FieldInfo{"window_ms", nullptr, "window length (ms)", Affects::kWhat, 0}, o.window_ms);
  v(FieldInfo{"hop_ms", nullptr, "hop between frames (ms)", Affects::kWhat, 0}, o.hop_ms);
  v(FieldInfo{"n_fft", "--n-fft", "spectrogram: FFT size (samples); 0 = the window length",
              Affects::kWhat, 0},
    o.n_fft);
  v(FieldInfo{"window", nullptr, "analysis window (periodic)"}, o.window);
  v(FieldInfo{"frames", nullptr, "frame convention: center or snip_edges"}, o.frames);
  v(FieldInfo{"power", "--power", "spectrogram: squared magnitude instead of magnitude"}, o.power);
  v(FieldInfo{"log1p", "--log1p", "spectrogram: log(1 + value)"}, o.log1p);
  v(FieldInfo{"normalize", "--normalize", "spectrogram: per-utterance mean/std normalisation"},
    o.normalize);
}

}  // namespace sluice::features
