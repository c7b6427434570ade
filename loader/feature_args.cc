#include "loader/feature_args.h"

#include "features/window.h"
#include "loader/features_json.h"

namespace sluice::loader {

Status ResolveFeatureArgs(const FeatureArgs& a, FeatureConfig* out, const std::string& table) {
  const auto unknown_window = [&] {
    return Status::InvalidArgument(table + "window_type '" + a.window_type +
                                   "': unknown window. HINT: povey, hamming, hanning, "
                                   "rectangular, blackman or sine");
  };
  if (a.kind == "fbank") {
    out->is_fbank = true;
    features::FbankOptions& f = out->fbank;
    f = a.fbank;
    f.sample_frequency = 0;
    f.frame_length_ms = a.frame_length_ms > 0 ? a.frame_length_ms : 25;
    f.frame_shift_ms = a.frame_shift_ms;
    if (!a.window_type.empty() && !features::ParseWindowType(a.window_type, &f.window_type))
      return unknown_window();
    f.snip_edges = a.snip_edges.value_or(true);
  } else if (a.kind == "spectrogram") {
    out->is_fbank = false;
    features::SpectrogramOptions& s = out->spectrogram;
    s = a.spectrogram;
    s.sample_rate = 0;
    s.window_ms = a.frame_length_ms > 0 ? a.frame_length_ms : 20;
    s.hop_ms = a.frame_shift_ms;
    if (!a.window_type.empty() && !features::ParseWindowType(a.window_type, &s.window))
      return unknown_window();
    // Given, --snip-edges picks the convention; left out, the spectrogram's own default
    // (centred, as DeepSpeech2's torch.stft) rather than fbank's Kaldi default.
    if (a.snip_edges.has_value())
      s.frames = *a.snip_edges ? features::FrameConvention::kSnipEdges
                               : features::FrameConvention::kCenter;
  } else {
    return Status::InvalidArgument("kind '" + a.kind + "': expected fbank or spectrogram");
  }
  return Status::OK();
}

Status MakeFeatureConfig(const FeatureArgs& a, int sample_rate, FeatureConfig* out,
                         const std::string& table) {
  SLUICE_RETURN_IF_ERROR(ResolveFeatureArgs(a, out, table));
  const std::string at = " (at " + std::to_string(sample_rate) + " Hz): ";
  if (out->is_fbank) {
    out->fbank.sample_frequency = static_cast<float>(sample_rate);
    const Status s = features::FbankComputer::Validate(out->fbank);
    if (!s.ok()) return Status::InvalidArgument(table + "fbank options" + at + s.message());
  } else {
    out->spectrogram.sample_rate = sample_rate;
    const Status s = features::SpectrogramComputer::Validate(out->spectrogram);
    if (!s.ok()) return Status::InvalidArgument(table + "spectrogram options" + at + s.message());
  }
  return Status::OK();
}

nlohmann::json FeatureConfigToJson(const FeatureConfig& c) {
  return c.is_fbank ? FbankFeaturesToJson(c.fbank)
                    : SpectrogramFeaturesToJson(c.spectrogram);
}

}  // namespace sluice::loader
