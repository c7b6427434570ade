#include "conversation_line.h"

#include <cctype>
#include <cmath>

#include <nlohmann/json.hpp>

#include "features/utf8.h"
#include "manifest_line.h"
#include "shards/format.h"

namespace sluice::shardify {
namespace {

using nlohmann::json;

// The role spellings accepted (case-insensitive): ours, NeMo's ("User", "Assistant") and
// ShareGPT's ("human", "gpt").
bool ParseRole(std::string name, shards::Role* role) {
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (name == "system") *role = shards::Role::kSystem;
  else if (name == "user" || name == "human") *role = shards::Role::kUser;
  else if (name == "assistant" || name == "gpt") *role = shards::Role::kAssistant;
  else return false;
  return true;
}

// "offset" and "duration" of `obj` into *decode; "" or why not.
std::string ParseSpan(const json& obj, features::DecodeOptions* decode) {
  for (const char* field : {"offset", "duration"}) {
    auto it = obj.find(field);
    if (it == obj.end() || it->is_null()) continue;
    if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < 0)
      return std::string("\"") + field + "\" must be a non-negative number of seconds";
    if (it->get<double>() > kMaxManifestSeconds)
      return std::string("\"") + field + "\" " + it->dump() + " s is out of range: at most " +
             FormatSeconds(kMaxManifestSeconds) + " s is accepted";
    (std::string(field) == "offset" ? decode->offset_seconds : decode->duration_seconds) =
        it->get<double>();
  }
  return "";
}

// A non-empty string at `key`, or "" when absent; false (with *why) when present but not one.
bool OptionalString(const json& obj, const char* key, std::string* out, std::string* why) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return true;
  if (!it->is_string()) {
    *why = std::string("\"") + key + "\" must be a string";
    return false;
  }
  *out = it->get<std::string>();
  return true;
}

// One turn; "" or why it is rejected (without the "turn N: " prefix).
std::string ParseTurn(const json& t, ConversationTurnIn* out) {
  if (!t.is_object()) return "not a JSON object";
  const bool has_role = t.contains("role"), has_from = t.contains("from");
  if (has_role == has_from) return "needs exactly one of \"role\" and \"from\"";
  const json& role = t[has_role ? "role" : "from"];
  if (!role.is_string()) return "the role must be a string";
  if (!ParseRole(role.get<std::string>(), &out->role))
    return "unknown role " + role.dump() +
           " (accepted: system, user, assistant; human, gpt; any case)";
  std::string why;
  if (auto type = t.find("type"); type != t.end()) {
    // NeMo's spelling: "type" says what "value" holds.
    if (t.contains("audio") || t.contains("content"))
      return "\"type\" (NeMo's spelling) takes \"value\", not \"audio\" or \"content\"";
    auto value = t.find("value");
    if (value == t.end() || !value->is_string()) return "missing \"value\" (a string)";
    if (*type == "text") {
      if (t.contains("text") && !t["text"].is_null())
        return "a text turn takes its text in \"value\", not \"text\"";
      out->text = value->get<std::string>();
    } else if (*type == "audio") {
      // NeMo writes the audio's transcript as "text" (null when none); it is not part of the
      // conversation, and a transcript silently dropped would be worse than a rejection.
      if (t.contains("text") && !t["text"].is_null())
        return "an audio turn's \"text\" (its transcript) is not part of the conversation. HINT: "
               "put text the model should see in a turn of its own";
      out->audio_path = value->get<std::string>();
      if (out->audio_path.empty()) return "empty audio path in \"value\"";
      if (why = ParseSpan(t, &out->decode); !why.empty()) return why;
    } else {
      return "\"type\" " + type->dump() + " is neither \"text\" nor \"audio\"";
    }
    return "";
  }
  if (t.contains("value")) {
    // ShareGPT's text turn: {"from": "human", "value": "..."}.
    if (t.contains("text") || t.contains("content"))
      return "more than one of \"text\", \"content\" and \"value\"";
    if (!OptionalString(t, "value", &out->text, &why)) return why;
  } else if (t.contains("text") && t.contains("content")) {
    return "both \"text\" and \"content\"";
  } else if (!OptionalString(t, t.contains("text") ? "text" : "content", &out->text, &why)) {
    return why;
  }
  if (auto audio = t.find("audio"); audio != t.end() && !audio->is_null()) {
    if (!audio->is_object())
      return "\"audio\" must be an object {\"path\", \"offset\", \"duration\"}";
    const bool p = audio->contains("path"), a = audio->contains("audio_filepath");
    if (p == a) return "\"audio\" needs exactly one of \"path\" and \"audio_filepath\"";
    const json& path = (*audio)[p ? "path" : "audio_filepath"];
    if (!path.is_string() || path.get_ref<const std::string&>().empty())
      return "the audio path must be a non-empty string";
    out->audio_path = path.get<std::string>();
    if (why = ParseSpan(*audio, &out->decode); !why.empty()) return "\"audio\": " + why;
  }
  if (out->text.empty() && out->audio_path.empty()) return "neither text nor audio";
  return "";
}

}  // namespace

bool ParseConversationLine(const std::string& line, const std::string& default_key,
                           ConversationLine* out, std::string* reason) {
  auto reject = [&](std::string why) {
    *reason = std::move(why);
    return false;
  };
  out->turns.clear();
  out->system_prompt = false;
  if (line.find_first_not_of(" \t") == std::string::npos) return reject("empty line");
  size_t bad = 0;
  if (!features::ValidUtf8(line, &bad))
    return reject("invalid UTF-8 at byte " + std::to_string(bad) + " of the line");
  json j;
  try {
    j = json::parse(line);
  } catch (const json::exception& e) {
    return reject(std::string("invalid JSON: ") + e.what());
  }
  if (!j.is_object()) return reject("not a JSON object");
  const bool has_turns = j.contains("turns"), has_conv = j.contains("conversations");
  if (has_turns && has_conv) return reject("both \"turns\" and \"conversations\"");
  if (!has_turns && !has_conv)
    return reject("missing \"turns\" (or NeMo's \"conversations\"): a list of turns");
  const json& turns = j[has_turns ? "turns" : "conversations"];
  if (!turns.is_array()) return reject("\"turns\" must be a list of turns");
  if (turns.empty()) return reject("empty conversation: no turns");
  std::string why;
  std::string system;
  if (!OptionalString(j, "system", &system, &why)) return reject(why);
  if (!system.empty()) {
    ConversationTurnIn s;
    s.role = shards::Role::kSystem;
    s.text = std::move(system);
    out->turns.push_back(std::move(s));
    out->system_prompt = true;
  }
  if (turns.size() + out->turns.size() > kMaxConversationTurns)
    return reject(std::to_string(turns.size()) + " turns, over the limit of " +
                  std::to_string(kMaxConversationTurns));
  for (size_t i = 0; i < turns.size(); ++i) {
    ConversationTurnIn t;
    if (why = ParseTurn(turns[i], &t); !why.empty())
      return reject("turn " + std::to_string(i) + ": " + why);
    if (i == 0 && t.role == shards::Role::kSystem && out->system_prompt)
      return reject("turn 0: a system turn and a \"system\" prompt; give one of them");
    out->turns.push_back(std::move(t));
  }
  std::string key = default_key;
  if (auto it = j.find("id"); it != j.end() && !it->is_null()) {
    if (!it->is_string() || it->get_ref<const std::string&>().empty())
      return reject("\"id\" must be a non-empty string");
    key = it->get<std::string>();
  }
  if (key.size() > shards::kMaxKeySize)
    return reject("key longer than " + std::to_string(shards::kMaxKeySize) + " bytes");
  out->key = std::move(key);
  return true;
}

}  // namespace sluice::shardify
