#include "manifest_line.h"

#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "features/utf8.h"
#include "shards/format.h"

namespace sluice::shardify {
std::string FormatSeconds(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  std::string s = buf;
  s.erase(s.find_last_not_of('0') + 1);
  if (s.back() == '.') s.pop_back();
  return s;
}

bool ParseManifestLine(const std::string& line, const features::Tokenizer* tokenizer,
                       ManifestLine* out, std::vector<int32_t>* ids, std::string* reason) {
  auto reject = [&](std::string why) {
    *reason = std::move(why);
    return false;
  };
  if (line.find_first_not_of(" \t") == std::string::npos) return reject("empty line");
  size_t bad = 0;
  if (!features::ValidUtf8(line, &bad))
    return reject("invalid UTF-8 at byte " + std::to_string(bad) + " of the line");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(line);
  } catch (const nlohmann::json::exception& e) {
    // Not only parse_error: a number out of double's range ("1e999") is out_of_range, and it
    // used to escape the pipeline and stop the whole run (input_manifest_fuzzer).
    return reject(std::string("invalid JSON: ") + e.what());
  }
  if (!j.is_object()) return reject("not a JSON object");
  auto path_it = j.find("audio_filepath");
  if (path_it == j.end() || !path_it->is_string() ||
      path_it->get_ref<const std::string&>().empty()) {
    return reject("missing \"audio_filepath\" (a non-empty string)");
  }
  auto text_it = j.find("text");
  if (text_it == j.end() || !text_it->is_string()) return reject("missing \"text\" (a string)");
  if (tokenizer) {
    ids->clear();
    Status st = tokenizer->Encode(text_it->get_ref<const std::string&>(), ids);
    if (!st.ok()) return reject("transcript: " + st.message());
  }
  features::DecodeOptions dopt;
  for (const char* field : {"offset", "duration"}) {
    auto it = j.find(field);
    if (it == j.end() || it->is_null()) continue;
    if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < 0) {
      return reject(std::string("\"") + field + "\" must be a non-negative number of seconds");
    }
    if (it->get<double>() > kMaxManifestSeconds) {
      return reject(std::string("\"") + field + "\" " + it->dump() +
                    " s is out of range: at most " + FormatSeconds(kMaxManifestSeconds) +
                    " s (about 116 days) is accepted");
    }
    (std::string(field) == "offset" ? dopt.offset_seconds : dopt.duration_seconds) =
        it->get<double>();
  }
  std::string key;
  if (auto it = j.find("id"); it != j.end() && !it->is_null()) {
    if (!it->is_string() || it->get_ref<const std::string&>().empty())
      return reject("\"id\" must be a non-empty string");
    key = it->get<std::string>();
  } else {
    key = path_it->get<std::string>();
    if (dopt.offset_seconds > 0 || dopt.duration_seconds >= 0) {
      key += "@" + FormatSeconds(dopt.offset_seconds) + "+" +
             (dopt.duration_seconds >= 0 ? FormatSeconds(dopt.duration_seconds) : "end");
    }
  }
  if (key.size() > shards::kMaxKeySize)
    return reject("key longer than " + std::to_string(shards::kMaxKeySize) + " bytes");
  // The metadata columns: "speaker" (NeMo's TTS manifests number speakers: an integer is kept as
  // its decimal text) and "lang" or "language".
  out->speaker.clear();
  out->language.clear();
  if (auto it = j.find("speaker"); it != j.end() && !it->is_null()) {
    if (it->is_string()) out->speaker = it->get<std::string>();
    else if (it->is_number_integer()) out->speaker = it->dump();
    else return reject("\"speaker\" must be a string or an integer");
  }
  for (const char* field : {"language", "lang"}) {
    auto it = j.find(field);
    if (it == j.end() || it->is_null()) continue;
    if (!it->is_string()) return reject(std::string("\"") + field + "\" must be a string");
    if (!out->language.empty() && out->language != it->get_ref<const std::string&>())
      return reject("\"language\" and \"lang\" disagree (\"" + out->language + "\" and " +
                    it->dump() + ")");
    out->language = it->get<std::string>();
  }
  out->audio_filepath = path_it->get<std::string>();
  out->text = text_it->get<std::string>();
  out->decode = dopt;
  out->key = std::move(key);
  return true;
}

}  // namespace sluice::shardify
