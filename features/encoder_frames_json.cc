// The JSON form of an encoder frames spec (docs/features.md, "Encoder frames"). Every key is
// checked: a misspelt one would otherwise leave a default in place and shift every budget.
#include <cmath>
#include <set>

#include <nlohmann/json.hpp>

#include "base/file.h"
#include "features/encoder_frames.h"

namespace sluice::features {
namespace {

using nlohmann::json;

class SpecParser {
 public:
  explicit SpecParser(const std::string& name) : name_(name) {}

  Status Bad(const std::string& where, const std::string& why) const {
    return Status::InvalidArgument(name_ + ": " + where + ": " + why);
  }

  Status OnlyKeys(const json& j, const std::string& where, const std::set<std::string>& keys) {
    if (!j.is_object()) return Bad(where, "expected an object");
    for (const auto& [k, v] : j.items()) {
      if (!keys.count(k)) {
        std::string known;
        for (const std::string& s : keys) known += (known.empty() ? "" : ", ") + s;
        return Bad(where, "unknown key \"" + k + "\" (known: " + known + ")");
      }
    }
    return Status::OK();
  }

  Status Int(const json& j, const char* key, const std::string& where, int* out) {
    if (!j.contains(key)) return Status::OK();
    const json& v = j[key];
    if (!v.is_number_integer() || v.get<int64_t>() < INT32_MIN || v.get<int64_t>() > INT32_MAX)
      return Bad(where + "." + key, "expected an integer");
    *out = v.get<int>();
    return Status::OK();
  }

  Status Bool(const json& j, const char* key, const std::string& where, bool* out) {
    if (!j.contains(key)) return Status::OK();
    if (!j[key].is_boolean()) return Bad(where + "." + key, "expected true or false");
    *out = j[key].get<bool>();
    return Status::OK();
  }

  // `key` in samples or `key`_ms in milliseconds at the sample rate, not both; milliseconds
  // must be a whole number of samples (Kaldi would truncate: say it in samples instead).
  Status Samples(const json& j, const std::string& key, int rate, int* out) {
    const std::string ms_key = key + "_ms";
    if (j.contains(key) && j.contains(ms_key))
      return Bad(key, "give " + key + " (samples) or " + ms_key + ", not both");
    if (j.contains(key)) return Int(j, key.c_str(), "spec", out);
    if (!j.contains(ms_key)) return Status::OK();
    if (!j[ms_key].is_number()) return Bad(ms_key, "expected a number of milliseconds");
    const double samples = j[ms_key].get<double>() * rate / 1000.0;
    const double whole = std::round(samples);
    if (std::abs(samples - whole) > 1e-6 || whole < 1 || whole > INT32_MAX)
      return Bad(ms_key, "is " + std::to_string(samples) + " samples at " + std::to_string(rate) +
                             " Hz, not a whole positive number; give " + key + " in samples");
    *out = static_cast<int>(whole);
    return Status::OK();
  }

  Status Stage(const json& j, const std::string& where, EncoderStage* s) {
    if (!j.is_object() || !j.contains("type") || !j["type"].is_string())
      return Bad(where, "expected an object with a \"type\" (conv or stack)");
    const std::string type = j["type"].get<std::string>();
    if (type == "conv") {
      SLUICE_RETURN_IF_ERROR(
          OnlyKeys(j, where, {"type", "kernel", "stride", "padding", "dilation"}));
      *s = EncoderStage{};
      s->kind = EncoderStage::Kind::kConv;
      if (!j.contains("kernel") || !j.contains("stride"))
        return Bad(where, "a conv needs \"kernel\" and \"stride\"");
      SLUICE_RETURN_IF_ERROR(Int(j, "kernel", where, &s->kernel));
      SLUICE_RETURN_IF_ERROR(Int(j, "stride", where, &s->stride));
      SLUICE_RETURN_IF_ERROR(Int(j, "padding", where, &s->padding));
      return Int(j, "dilation", where, &s->dilation);
    }
    if (type == "stack") {
      SLUICE_RETURN_IF_ERROR(OnlyKeys(j, where, {"type", "frames", "stride", "pad_end"}));
      *s = EncoderStage{};
      s->kind = EncoderStage::Kind::kStack;
      if (!j.contains("frames")) return Bad(where, "a stack needs \"frames\"");
      SLUICE_RETURN_IF_ERROR(Int(j, "frames", where, &s->kernel));
      s->stride = s->kernel;
      SLUICE_RETURN_IF_ERROR(Int(j, "stride", where, &s->stride));
      return Bool(j, "pad_end", where, &s->pad_end);
    }
    return Bad(where + ".type", "\"" + type + "\" is not a stage type (conv, stack)");
  }

  Status Parse(std::string_view text, EncoderFramesSpec* spec) {
    const json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return Bad("spec", "not valid JSON");
    SLUICE_RETURN_IF_ERROR(
        OnlyKeys(j, "spec",
                 {"sample_rate", "frame_length", "frame_length_ms", "frame_shift", "frame_shift_ms",
                  "framing", "drop_last_frame", "stages", "chunk_frames"}));
    EncoderFramesSpec s;
    s.name = name_;
    EncoderFrontEnd& f = s.front_end;
    SLUICE_RETURN_IF_ERROR(Int(j, "sample_rate", "spec", &f.sample_rate));
    if (f.sample_rate < 1) return Bad("sample_rate", "must be >= 1 Hz");
    SLUICE_RETURN_IF_ERROR(Samples(j, "frame_length", f.sample_rate, &f.frame_length));
    SLUICE_RETURN_IF_ERROR(Samples(j, "frame_shift", f.sample_rate, &f.frame_shift));
    if (j.contains("framing")) {
      bool found = false;
      if (j["framing"].is_string()) {
        for (const auto& n : kFrameConventionNames) {
          if (j["framing"].get<std::string>() == n.name) {
            f.convention = n.value;
            found = true;
          }
        }
      }
      if (!found) return Bad("framing", "expected center, snip_edges or kaldi_center");
    }
    SLUICE_RETURN_IF_ERROR(Bool(j, "drop_last_frame", "spec", &f.drop_last_frame));
    if (j.contains("chunk_frames")) {
      if (!j["chunk_frames"].is_number_integer()) return Bad("chunk_frames", "expected an integer");
      s.chunk_frames = j["chunk_frames"].get<int64_t>();
    }
    if (!j.contains("stages") || !j["stages"].is_array())
      return Bad("stages", "expected a list of stages (an empty list: no subsampling)");
    for (size_t i = 0; i < j["stages"].size(); ++i) {
      EncoderStage st;
      SLUICE_RETURN_IF_ERROR(Stage(j["stages"][i], "stages[" + std::to_string(i) + "]", &st));
      s.stages.push_back(st);
    }
    SLUICE_RETURN_IF_ERROR(ValidateEncoderFramesSpec(s));
    *spec = std::move(s);
    return Status::OK();
  }

 private:
  const std::string& name_;
};

}  // namespace

Status ParseEncoderFramesSpec(std::string_view json, const std::string& name,
                              EncoderFramesSpec* spec) {
  return SpecParser(name).Parse(json, spec);
}

std::string CanonicalEncoderFramesSpec(const EncoderFramesSpec& spec) {
  // Samples, never milliseconds, and each stage with the keys its kind reads: a preset and the
  // file that spells it out (in ms, defaults left out) give the same text.
  const EncoderFrontEnd& f = spec.front_end;
  const char* framing = "";
  for (const auto& n : kFrameConventionNames)
    if (n.value == f.convention) framing = n.name;
  json j = {{"sample_rate", f.sample_rate},
            {"frame_length", f.frame_length},
            {"frame_shift", f.frame_shift},
            {"framing", framing},
            {"drop_last_frame", f.drop_last_frame},
            {"chunk_frames", spec.chunk_frames},
            {"stages", json::array()}};
  for (const EncoderStage& s : spec.stages) {
    if (s.kind == EncoderStage::Kind::kConv)
      j["stages"].push_back({{"type", "conv"},
                             {"kernel", s.kernel},
                             {"stride", s.stride},
                             {"padding", s.padding},
                             {"dilation", s.dilation}});
    else
      j["stages"].push_back(
          {{"type", "stack"}, {"frames", s.kernel}, {"stride", s.stride}, {"pad_end", s.pad_end}});
  }
  return j.dump();  // nlohmann's object sorts its keys
}

Status ResolveEncoderFramesSpec(const std::string& preset_or_path, EncoderFramesSpec* spec) {
  const Status preset = EncoderFramesPreset(preset_or_path, spec);
  if (preset.ok() || preset_or_path.find_first_of("/.") == std::string::npos) return preset;
  std::string text;
  SLUICE_RETURN_IF_ERROR(ReadFileToString(preset_or_path, &text));
  return ParseEncoderFramesSpec(text, preset_or_path, spec);
}

}  // namespace sluice::features
