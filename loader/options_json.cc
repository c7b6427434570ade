#include "loader/options_json.h"

#include "features/waveform_augment.h"
#include "loader/speed_spelling.h"

namespace sluice::loader {
namespace {

// `path` is a JSON pointer ("/loader/fbank/dither").
void Differences(const nlohmann::json& now, const nlohmann::json& stored, const std::string& path,
                 const std::string& stored_name, std::string* out, std::string* out_path) {
  auto found = [&](const std::string& p, const std::string& a, const std::string& b) {
    std::string dotted = p.substr(1);
    for (char& c : dotted) c = c == '/' ? '.' : c;
    *out = dotted + ": " + a + " (" + stored_name + ": " + b + ")";
    *out_path = p;
  };
  if (now.is_object() && stored.is_object()) {
    for (auto it = now.begin(); it != now.end() && out->empty(); ++it) {
      const std::string p = path + "/" + it.key();
      if (!stored.contains(it.key()))
        found(p, it.value().dump(), "absent");
      else
        Differences(it.value(), stored[it.key()], p, stored_name, out, out_path);
    }
    for (auto it = stored.begin(); it != stored.end() && out->empty(); ++it)
      if (!now.contains(it.key())) found(path + "/" + it.key(), "absent", it.value().dump());
    return;
  }
  if (now != stored) found(path, now.dump(), stored.dump());
}

}  // namespace

std::string FirstDifference(const nlohmann::json& now, const nlohmann::json& stored,
                            const std::string& stored_name, std::string* path) {
  std::string out;
  path->clear();
  Differences(now, stored, "", stored_name, &out, path);
  return out;
}

nlohmann::json LoaderConfigJson(const LoaderOptions& given, int sample_rate) {
  // Speed perturbation in one spelling whichever was given (speed_spelling.h); a disagreement
  // is Loader::Open's to refuse.
  LoaderOptions o = given;
  (void)MoveSpeedPerturbIntoChain(&o);
  SpeedPerturbForRecord(&o);
  nlohmann::json j = ToJson(o, Fields::kWhat);
  // The feature arguments as the computer of the kind in use resolves them (the kind's defaults
  // spelled out or left out alike), under that computer's name.
  j.erase("features");
  if (o.kind == FeatureKind::kFbank || o.kind == FeatureKind::kSpectrogram) {
    FeatureArgs a = o.features;
    a.kind = FeatureKindName(o.kind);
    FeatureConfig c;
    if (!ResolveFeatureArgs(a, &c).ok()) {
      j["features"] = ToJson(o.features, Fields::kWhat);  // as given: Open refuses them
    } else if (c.is_fbank) {
      c.fbank.sample_frequency = static_cast<float>(sample_rate);
      j["fbank"] = ToJson(c.fbank, Fields::kWhat);
      if (sample_rate == 0) j["fbank"].erase("sample_frequency");
    } else {
      c.spectrogram.sample_rate = sample_rate;
      j["spectrogram"] = ToJson(c.spectrogram, Fields::kWhat);
      if (sample_rate == 0) j["spectrogram"].erase("sample_rate");
    }
  }
  if (!o.spec_augment) j.erase("spec_augment_options");
  if (!o.speed_perturb) j.erase("speed_perturb_options");
  // Off, the chain leaves no trace, so configurations from before it existed compare equal.
  if (!features::WaveformAugmentEnabled(o.waveform_augment) &&
      o.waveform_augment.speed.probability == 0 && o.waveform_augment.tempo.probability == 0) {
    j.erase("waveform_augment");
  } else {
    // Transforms that joined the chain later leave no trace while off, so that records of the
    // chain from before them compare equal.
    for (const char* t : {"speed", "tempo", "babble"})
      if (j["waveform_augment"][t]["probability"] == 0.0) j["waveform_augment"].erase(t);
  }
  if (o.noise_content.empty()) j.erase("noise_content");
  if (o.rir_content.empty()) j.erase("rir_content");
  if (o.babble_content.empty()) j.erase("babble_content");
  if (o.packing.seq_len == 0) j.erase("packing");
  // Options that came later leave no trace at their defaults, so that run records written before
  // them still compare equal (a resume from an older checkpoint).
  if (!o.batching.bucket_2d) j["batching"].erase("bucket_2d");
  if (o.batching.max_padded_sum == 0) j["batching"].erase("max_padded_sum");
  if (j.contains("packing") && !o.packing.balance_ranks) j["packing"].erase("balance_ranks");
  if (o.window_seconds == 0) j.erase("window_seconds");
  // Only conversation datasets take them (Open refuses them elsewhere): other runs' records
  // stay as they were. The paths are "how"; the contents, once Open has read them, "what".
  if (j.contains("conversation")) {
    nlohmann::json& c = j["conversation"];
    if (o.conversation.chat_template_content.empty()) c.erase("chat_template_content");
    if (o.conversation.encoder_frames_content.empty()) c.erase("encoder_frames_content");
    if (c.empty()) j.erase("conversation");
  }
  return j;
}

}  // namespace sluice::loader
