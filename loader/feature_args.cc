#include "loader/feature_args.h"

#include "features/window.h"
#include "loader/features_json.h"

namespace sluice::loader {

Status MakeFeatureConfig(const FeatureArgs& a, int sample_rate, FeatureConfig* out) {
  if (a.kind == "fbank") {
    out->is_fbank = true;
    features::FbankOptions& f = out->fbank;
    f = a.fbank;
    f.sample_frequency = static_cast<float>(sample_rate);
    f.frame_length_ms = a.frame_length_ms > 0 ? a.frame_length_ms : 25;
    f.frame_shift_ms = a.frame_shift_ms;
    if (!a.window_type.empty() && !features::ParseWindowType(a.window_type, &f.window_type)) {
      return Status::InvalidArgument("--window-type '" + a.window_type + "': unknown window");
    }
    f.snip_edges = a.snip_edges.value_or(true);
    Status s = features::FbankComputer::Validate(f);
    if (!s.ok()) return Status::InvalidArgument("fbank options: " + s.message());
  } else if (a.kind == "spectrogram") {
    out->is_fbank = false;
    features::SpectrogramOptions& s = out->spectrogram;
    s = a.spectrogram;
    s.sample_rate = sample_rate;
    s.window_ms = a.frame_length_ms > 0 ? a.frame_length_ms : 20;
    s.hop_ms = a.frame_shift_ms;
    if (!a.window_type.empty() && !features::ParseWindowType(a.window_type, &s.window)) {
      return Status::InvalidArgument("--window-type '" + a.window_type + "': unknown window");
    }
    // Given, --snip-edges picks the convention; left out, the spectrogram's own default
    // (centred, as DeepSpeech2's torch.stft) rather than fbank's Kaldi default.
    if (a.snip_edges.has_value())
      s.frames = *a.snip_edges ? features::FrameConvention::kSnipEdges
                               : features::FrameConvention::kCenter;
    Status st = features::SpectrogramComputer::Validate(s);
    if (!st.ok()) return Status::InvalidArgument("spectrogram options: " + st.message());
  } else {
    return Status::InvalidArgument("feature kind '" + a.kind + "': expected fbank or spectrogram");
  }
  return Status::OK();
}

nlohmann::json FeatureConfigToJson(const FeatureConfig& c) {
  return c.is_fbank ? FbankFeaturesToJson(c.fbank)
                    : SpectrogramFeaturesToJson(c.spectrogram);
}

}  // namespace sluice::loader
