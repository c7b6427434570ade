#include "export_lines.h"

#include <cstdio>
#include <nlohmann/json.hpp>

namespace sluice::shardify {
namespace {

constexpr size_t kMaxKeyInName = 100;

// Seconds of the record: exact samples / rate, which the readers turn back into the same
// sample count (lhotse checks num_samples against duration * sampling_rate).
double Seconds(const ExportRecord& r) {
  return static_cast<double>(r.samples) / static_cast<double>(r.sample_rate);
}

// Keys and texts are valid UTF-8 in a dataset shardify wrote; a damaged one is written with
// U+FFFD rather than failing the whole export halfway.
std::string Dump(const nlohmann::ordered_json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

std::string ExportAudioName(uint64_t index, std::string_view key,
                            features::AudioContainer container) {
  char number[32];
  std::snprintf(number, sizeof number, "%08llu-", static_cast<unsigned long long>(index));
  std::string name = std::string("audio/") + number;
  for (char c : key.substr(0, kMaxKeyInName)) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '.' || c == '_' || c == '-';
    name += plain ? c : '_';
  }
  return name + features::AudioContainerExtension(container);
}

std::string NemoLine(const ExportRecord& r, const std::string& audio_path) {
  nlohmann::ordered_json j;
  j["audio_filepath"] = audio_path;
  j["duration"] = Seconds(r);
  j["text"] = std::string(r.text);
  j["id"] = std::string(r.key);
  return Dump(j);
}

std::string LhotseCutLine(const ExportRecord& r, const std::string& audio_path) {
  const std::string id(r.key);
  const double seconds = Seconds(r);
  nlohmann::ordered_json source;
  source["type"] = "file";
  source["channels"] = {0};
  source["source"] = audio_path;
  nlohmann::ordered_json recording;
  recording["id"] = id;
  recording["sources"] = nlohmann::ordered_json::array({source});
  recording["sampling_rate"] = r.sample_rate;
  recording["num_samples"] = r.samples;
  recording["duration"] = seconds;
  recording["channel_ids"] = {0};
  nlohmann::ordered_json sup;
  sup["id"] = id;
  sup["recording_id"] = id;
  sup["start"] = 0.0;
  sup["duration"] = seconds;
  sup["channel"] = 0;
  sup["text"] = std::string(r.text);
  nlohmann::ordered_json cut;
  cut["id"] = id;
  cut["start"] = 0.0;
  cut["duration"] = seconds;
  cut["channel"] = 0;
  cut["supervisions"] = nlohmann::ordered_json::array({sup});
  cut["recording"] = recording;
  cut["type"] = "MonoCut";
  return Dump(cut);
}

}  // namespace sluice::shardify
