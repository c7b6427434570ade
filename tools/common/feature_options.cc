#include "feature_options.h"

#include "features/window.h"
#include "loader/features_json.h"

namespace sluice::tools {

void AddFeatureOptions(CLI::App* app, FeatureArgs* a) {
  app->add_option("--frame-length", a->frame_length_ms, "Frame length (ms); 0: 25 for fbank, 20 for spectrogram");
  app->add_option("--frame-shift", a->frame_shift_ms, "Frame shift (ms)")->capture_default_str();
  app->add_option("--num-mel-bins", a->num_mel_bins, "fbank: mel bins")->capture_default_str();
  app->add_option("--dither", a->dither, "fbank: dither noise std in int16 units; 0 = off")->capture_default_str();
  app->add_option("--preemphasis-coefficient", a->preemphasis_coefficient, "fbank")->capture_default_str();
  app->add_option("--remove-dc-offset", a->remove_dc_offset, "fbank: subtract each frame's mean")
      ->capture_default_str();
  app->add_option("--window-type", a->window_type,
                  "povey, hamming, hanning, rectangular, blackman, sine (default: povey for fbank, "
                  "hamming for spectrogram)");
  app->add_option_function<bool>(
         "--snip-edges",
         [a](const bool& v) {
           a->snip_edges = v;
           a->snip_edges_set = true;
         },
         "Whole frames only (Kaldi); false: fbank mirrors the edges, spectrogram centres frames "
         "as torch.stft(center=True). Default: true for fbank, false for the spectrogram");
  app->add_option("--low-freq", a->low_freq, "fbank: low edge of the mel bins (Hz)")->capture_default_str();
  app->add_option("--high-freq", a->high_freq, "fbank: high edge (Hz); <= 0 is an offset from Nyquist")
      ->capture_default_str();
  app->add_option("--use-energy", a->use_energy, "fbank: add a log-energy column")->capture_default_str();
  app->add_option("--n-fft", a->n_fft, "spectrogram: FFT size (samples); 0 = the window length");
  app->add_option("--normalize", a->normalize, "spectrogram: per-utterance mean/std normalisation")
      ->capture_default_str();
  app->add_option("--blackman-coeff", a->blackman_coeff, "fbank: blackman window")->capture_default_str();
  app->add_option("--round-to-power-of-two", a->round_to_power_of_two,
                  "fbank: zero-pad frames to a power of two for the FFT")
      ->capture_default_str();
  app->add_option("--raw-energy", a->raw_energy, "fbank: energy before preemphasis and window")
      ->capture_default_str();
  app->add_option("--energy-floor", a->energy_floor, "fbank: floor on the energy (linear)")
      ->capture_default_str();
  app->add_option("--htk-compat", a->htk_compat, "fbank: energy column last")->capture_default_str();
  app->add_option("--use-power", a->use_power, "fbank: power (true) or magnitude spectrum")
      ->capture_default_str();
  app->add_option("--use-log-fbank", a->use_log_fbank, "fbank: log of the mel energies")
      ->capture_default_str();
}

Status MakeFeatureConfig(const FeatureArgs& a, int sample_rate, FeatureConfig* out) {
  if (a.kind == "fbank") {
    out->is_fbank = true;
    features::FbankOptions& f = out->fbank;
    f.sample_frequency = static_cast<float>(sample_rate);
    f.frame_length_ms = a.frame_length_ms > 0 ? a.frame_length_ms : 25;
    f.frame_shift_ms = a.frame_shift_ms;
    f.num_mel_bins = a.num_mel_bins;
    f.dither = a.dither;
    f.preemphasis_coefficient = a.preemphasis_coefficient;
    f.remove_dc_offset = a.remove_dc_offset;
    if (!a.window_type.empty() && !features::ParseWindowType(a.window_type, &f.window_type)) {
      return Status::InvalidArgument("--window-type '" + a.window_type + "': unknown window");
    }
    f.snip_edges = a.snip_edges;
    f.low_freq = a.low_freq;
    f.high_freq = a.high_freq;
    f.use_energy = a.use_energy;
    f.blackman_coeff = a.blackman_coeff;
    f.round_to_power_of_two = a.round_to_power_of_two;
    f.raw_energy = a.raw_energy;
    f.energy_floor = a.energy_floor;
    f.htk_compat = a.htk_compat;
    f.use_power = a.use_power;
    f.use_log_fbank = a.use_log_fbank;
    Status s = features::FbankComputer::Validate(f);
    if (!s.ok()) return Status::InvalidArgument("fbank options: " + s.message());
  } else if (a.kind == "spectrogram") {
    out->is_fbank = false;
    features::SpectrogramOptions& s = out->spectrogram;
    s.sample_rate = sample_rate;
    s.window_ms = a.frame_length_ms > 0 ? a.frame_length_ms : 20;
    s.hop_ms = a.frame_shift_ms;
    s.n_fft = a.n_fft;
    if (!a.window_type.empty() && !features::ParseWindowType(a.window_type, &s.window)) {
      return Status::InvalidArgument("--window-type '" + a.window_type + "': unknown window");
    }
    // Given, --snip-edges picks the convention; left out, the spectrogram's own default
    // (centred, as DeepSpeech2's torch.stft) rather than fbank's Kaldi default.
    s.frames = !a.snip_edges_set ? features::SpectrogramOptions().frames
               : a.snip_edges    ? features::FrameConvention::kSnipEdges
                                 : features::FrameConvention::kCenter;
    s.normalize = a.normalize;
    Status st = features::SpectrogramComputer::Validate(s);
    if (!st.ok()) return Status::InvalidArgument("spectrogram options: " + st.message());
  } else {
    return Status::InvalidArgument("feature kind '" + a.kind + "': expected fbank or spectrogram");
  }
  return Status::OK();
}

nlohmann::json FeatureConfigToJson(const FeatureConfig& c) {
  return c.is_fbank ? loader::FbankFeaturesToJson(c.fbank)
                    : loader::SpectrogramFeaturesToJson(c.spectrogram);
}

}  // namespace sluice::tools
