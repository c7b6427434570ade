#include "loader/features_json.h"

#include <string>

#include "features/window.h"

namespace sluice::loader {
namespace {

// Sets *v from j[a], or from j[b] (an older name) when only that is present.
template <typename T>
void Get(const nlohmann::json& j, const char* a, const char* b, T* v) {
  if (j.contains(a)) *v = j[a].get<T>();
  else if (b != nullptr && j.contains(b)) *v = j[b].get<T>();
}

void GetWindow(const nlohmann::json& j, const char* name, features::WindowType* w) {
  if (!j.contains(name)) return;
  const std::string s = j[name].get<std::string>();
  if (!features::ParseWindowType(s, w))
    throw std::invalid_argument(std::string(name) + " '" + s + "' is not a window type");
}

}  // namespace

nlohmann::json FbankFeaturesToJson(const features::FbankOptions& f) {
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

nlohmann::json SpectrogramFeaturesToJson(const features::SpectrogramOptions& s) {
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

Status FeaturesFromJson(const nlohmann::json& j, bool* is_fbank, features::FbankOptions* f,
                        features::SpectrogramOptions* s) {
  std::string kind = "fbank";
  try {
    Get(j, "kind", nullptr, &kind);
    if (kind == "fbank") {
      *is_fbank = true;
      Get(j, "sample_frequency", nullptr, &f->sample_frequency);
      Get(j, "frame_length_ms", "frame_length", &f->frame_length_ms);
      Get(j, "frame_shift_ms", "frame_shift", &f->frame_shift_ms);
      Get(j, "num_mel_bins", "num-mel-bins", &f->num_mel_bins);
      Get(j, "dither", nullptr, &f->dither);
      Get(j, "preemphasis_coefficient", nullptr, &f->preemphasis_coefficient);
      Get(j, "remove_dc_offset", nullptr, &f->remove_dc_offset);
      GetWindow(j, "window_type", &f->window_type);
      Get(j, "round_to_power_of_two", nullptr, &f->round_to_power_of_two);
      Get(j, "snip_edges", "snip-edges", &f->snip_edges);
      Get(j, "low_freq", nullptr, &f->low_freq);
      Get(j, "high_freq", nullptr, &f->high_freq);
      Get(j, "use_energy", "use-energy", &f->use_energy);
      Get(j, "raw_energy", nullptr, &f->raw_energy);
      Get(j, "energy_floor", nullptr, &f->energy_floor);
      Get(j, "htk_compat", nullptr, &f->htk_compat);
      Get(j, "use_power", nullptr, &f->use_power);
      Get(j, "use_log_fbank", nullptr, &f->use_log_fbank);
    } else if (kind == "spectrogram") {
      *is_fbank = false;
      Get(j, "sample_rate", nullptr, &s->sample_rate);
      Get(j, "window_ms", nullptr, &s->window_ms);
      Get(j, "hop_ms", nullptr, &s->hop_ms);
      Get(j, "n_fft", nullptr, &s->n_fft);
      GetWindow(j, "window", &s->window);
      bool center = s->frames == features::FrameConvention::kCenter;
      Get(j, "center", nullptr, &center);
      s->frames = center ? features::FrameConvention::kCenter : features::FrameConvention::kSnipEdges;
      Get(j, "power", nullptr, &s->power);
      Get(j, "log1p", nullptr, &s->log1p);
      Get(j, "normalize", nullptr, &s->normalize);
    } else {
      return Status::Unsupported("manifest.json: precomputed features of kind '" + kind + "'");
    }
  } catch (const std::exception& e) {
    return Status::InvalidArgument(std::string("manifest.json: features: ") + e.what());
  }
  return Status::OK();
}

}  // namespace sluice::loader
