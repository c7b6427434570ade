#include "feature_options.h"

#include "features/window.h"

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
  app->add_option("--snip-edges", a->snip_edges,
                  "Whole frames only (Kaldi); false: fbank mirrors the edges, spectrogram centres "
                  "frames as torch.stft(center=True)")
      ->capture_default_str();
  app->add_option("--low-freq", a->low_freq, "fbank: low edge of the mel bins (Hz)")->capture_default_str();
  app->add_option("--high-freq", a->high_freq, "fbank: high edge (Hz); <= 0 is an offset from Nyquist")
      ->capture_default_str();
  app->add_option("--use-energy", a->use_energy, "fbank: add a log-energy column")->capture_default_str();
  app->add_option("--n-fft", a->n_fft, "spectrogram: FFT size (samples); 0 = the window length");
  app->add_option("--normalize", a->normalize, "spectrogram: per-utterance mean/std normalisation")
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
    s.frames = a.snip_edges ? features::FrameConvention::kSnipEdges : features::FrameConvention::kCenter;
    s.normalize = a.normalize;
    Status st = features::SpectrogramComputer::Validate(s);
    if (!st.ok()) return Status::InvalidArgument("spectrogram options: " + st.message());
  } else {
    return Status::InvalidArgument("feature kind '" + a.kind + "': expected fbank or spectrogram");
  }
  return Status::OK();
}

nlohmann::json FeatureConfigToJson(const FeatureConfig& c) {
  if (c.is_fbank) {
    const features::FbankOptions& f = c.fbank;
    return {{"kind", "fbank"},
            {"dtype", "float16"},
            {"dim", f.num_mel_bins + (f.use_energy ? 1 : 0)},
            {"sample_frequency", f.sample_frequency},
            {"frame_length_ms", f.frame_length_ms},
            {"frame_shift_ms", f.frame_shift_ms},
            {"num_mel_bins", f.num_mel_bins},
            {"dither", f.dither},
            {"preemphasis_coefficient", f.preemphasis_coefficient},
            {"remove_dc_offset", f.remove_dc_offset},
            {"window_type", features::WindowTypeName(f.window_type)},
            {"round_to_power_of_two", f.round_to_power_of_two},
            {"snip_edges", f.snip_edges},
            {"low_freq", f.low_freq},
            {"high_freq", f.high_freq},
            {"use_energy", f.use_energy},
            {"raw_energy", f.raw_energy},
            {"energy_floor", f.energy_floor},
            {"htk_compat", f.htk_compat},
            {"use_power", f.use_power},
            {"use_log_fbank", f.use_log_fbank}};
  }
  const features::SpectrogramOptions& s = c.spectrogram;
  return {{"kind", "spectrogram"},
          {"dtype", "float16"},
          {"dim", features::SpectrogramComputer(s).Dim()},
          {"sample_rate", s.sample_rate},
          {"window_ms", s.window_ms},
          {"hop_ms", s.hop_ms},
          {"n_fft", s.n_fft},
          {"window", features::WindowTypeName(s.window)},
          {"center", s.frames == features::FrameConvention::kCenter},
          {"power", s.power},
          {"log1p", s.log1p},
          {"normalize", s.normalize}};
}

}  // namespace sluice::tools
