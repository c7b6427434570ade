#include "loader/features_json.h"

#include <string>
#include <utility>

#include "loader/options_json.h"

namespace sluice::loader {
namespace {

// `j` with the names early manifests used renamed to the table's keys (when only the old name is
// there), and the spectrogram's "center": true/false of manifests before the options tables
// (docs/formats/manifest.md) as "frames".
nlohmann::json WithCurrentNames(nlohmann::json j) {
  static const std::pair<const char*, const char*> kOld[] = {{"frame_length", "frame_length_ms"},
                                                             {"frame_shift", "frame_shift_ms"},
                                                             {"num-mel-bins", "num_mel_bins"},
                                                             {"snip-edges", "snip_edges"},
                                                             {"use-energy", "use_energy"}};
  for (const auto& [old_name, name] : kOld)
    if (j.contains(old_name) && !j.contains(name)) j[name] = j[old_name];
  if (j.contains("center") && !j.contains("frames"))
    j["frames"] = j["center"].get<bool>() ? "center" : "snip_edges";
  return j;
}

}  // namespace

nlohmann::json FbankFeaturesToJson(const features::FbankOptions& f) {
  nlohmann::json j = {
      {"kind", "fbank"}, {"dtype", "float16"}, {"dim", f.num_mel_bins + (f.use_energy ? 1 : 0)}};
  j.update(ToJson(f));
  return j;
}

nlohmann::json SpectrogramFeaturesToJson(const features::SpectrogramOptions& s) {
  nlohmann::json j = {{"kind", "spectrogram"},
                      {"dtype", "float16"},
                      {"dim", features::SpectrogramComputer(s).Dim()}};
  j.update(ToJson(s));
  return j;
}

Status FeaturesFromJson(const nlohmann::json& j, bool* is_fbank, features::FbankOptions* f,
                        features::SpectrogramOptions* s) {
  std::string kind = "fbank";
  try {
    if (j.contains("kind")) kind = j["kind"].get<std::string>();
    const nlohmann::json named = WithCurrentNames(j);
    if (kind == "fbank") {
      *is_fbank = true;
      return FromJson(named, "manifest.json: features", f);
    }
    if (kind == "spectrogram") {
      *is_fbank = false;
      return FromJson(named, "manifest.json: features", s);
    }
  } catch (const std::exception& e) {
    return Status::InvalidArgument(std::string("manifest.json: features: ") + e.what());
  }
  return Status::Unsupported("manifest.json: precomputed features of kind '" + kind + "'");
}

}  // namespace sluice::loader
