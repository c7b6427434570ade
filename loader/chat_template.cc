#include "loader/chat_template.h"

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "shards/checksum.h"

namespace sluice::loader {
namespace {

using nlohmann::json;

Status Bad(std::string_view name, const std::string& path, const std::string& why) {
  return Status::InvalidArgument(std::string(name) + ": " + path + ": " + why +
                                 ". HINT: docs/conversations.md, \"Templates\", lists the keys");
}

Status ParsePiece(const json& v, std::string_view name, const std::string& path,
                  TemplatePiece* out) {
  if (v.is_string()) {
    out->text = v.get<std::string>();
    return Status::OK();
  }
  if (v.is_object() && v.size() == 1 && v.contains("ids") && v["ids"].is_array()) {
    for (const json& id : v["ids"]) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
        return Bad(name, path + ".ids", "ids are integers from 0 to 2^31 - 1");
      out->ids.push_back(id.get<int32_t>());
    }
    out->given_ids = true;
    return Status::OK();
  }
  return Bad(name, path, "expected a string or {\"ids\": [...]}");
}

json PieceJson(const TemplatePiece& p) { return p.given_ids ? json{{"ids", p.ids}} : json(p.text); }

Status Resolve(const features::Tokenizer& tok, TemplatePiece* p) {
  if (p->given_ids) return Status::OK();
  p->ids.clear();
  if (p->text.empty()) return Status::OK();
  Status st = tok.Encode(p->text, &p->ids);
  if (!st.ok())
    return Status::InvalidArgument("template text \"" + p->text + "\": " + st.message());
  return Status::OK();
}

void Append(const TemplatePiece& p, bool loss, RenderedConversation* out) {
  out->ids.insert(out->ids.end(), p.ids.begin(), p.ids.end());
  out->loss.insert(out->loss.end(), p.ids.size(), loss ? 1 : 0);
}

}  // namespace

Status ParseChatTemplate(std::string_view json_text, std::string_view name, ChatTemplate* out) {
  *out = ChatTemplate();
  out->roles[static_cast<size_t>(shards::Role::kAssistant)].loss = true;
  json j = json::parse(json_text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Bad(name, "$", "not a JSON object");
  for (const auto& [key, v] : j.items()) {
    if (key != "roles" && key != "placeholder" && key != "task")
      return Bad(name, "$." + key, "unknown key (roles, placeholder, task)");
  }
  if (j.contains("task")) {
    const json& task = j["task"];
    if (!task.is_object() || task.size() != 1 || !task.contains("prompt"))
      return Bad(name, "$.task", "expected {\"prompt\": TEXT or {\"ids\": [...]}}");
    SLUICE_RETURN_IF_ERROR(ParsePiece(task["prompt"], name, "$.task.prompt", &out->task_prompt));
    out->has_task = true;
  }
  // Text-only conversations have no audio span to fill: the loader asks for a placeholder only
  // of a dataset with audio turns (LoadConversationSpec).
  if (j.contains("placeholder")) {
    SLUICE_RETURN_IF_ERROR(ParsePiece(j["placeholder"], name, "$.placeholder", &out->placeholder));
    out->has_placeholder = true;
  }
  if (j.contains("roles")) {
    if (!j["roles"].is_object()) return Bad(name, "$.roles", "expected an object");
    for (const auto& [role_name, r] : j["roles"].items()) {
      const std::string path = "$.roles." + role_name;
      size_t role = shards::kMaxRole + 1;
      for (size_t i = 0; i <= shards::kMaxRole; ++i)
        if (role_name == shards::RoleName(static_cast<shards::Role>(i))) role = i;
      if (role > shards::kMaxRole) return Bad(name, path, "unknown role (system, user, assistant)");
      if (!r.is_object()) return Bad(name, path, "expected an object");
      RoleTemplate& rt = out->roles[role];
      for (const auto& [key, v] : r.items()) {
        const std::string p = path + "." + key;
        if (key == "prefix") SLUICE_RETURN_IF_ERROR(ParsePiece(v, name, p, &rt.prefix));
        else if (key == "suffix") SLUICE_RETURN_IF_ERROR(ParsePiece(v, name, p, &rt.suffix));
        else if (key == "audio_prefix")
          SLUICE_RETURN_IF_ERROR(ParsePiece(v, name, p, &rt.audio_prefix));
        else if (key == "audio_suffix")
          SLUICE_RETURN_IF_ERROR(ParsePiece(v, name, p, &rt.audio_suffix));
        else if (key == "audio_position") {
          if (v != "before_text" && v != "after_text")
            return Bad(name, p, "expected \"before_text\" or \"after_text\"");
          rt.audio_after_text = v == "after_text";
        } else if (key == "loss") {
          if (!v.is_boolean()) return Bad(name, p, "expected true or false");
          rt.loss = v.get<bool>();
        } else {
          return Bad(name, p,
                     "unknown key (prefix, suffix, audio_prefix, audio_suffix, audio_position, "
                     "loss)");
        }
      }
    }
  }
  // Canonical: every role with every key, defaults filled, keys sorted (nlohmann's object is
  // ordered by key), so two files that mean the same template have the same checksum.
  json c = {{"roles", json::object()}};
  if (out->has_placeholder) c["placeholder"] = PieceJson(out->placeholder);
  // Only when given: templates without a task keep the checksum they had.
  if (out->has_task) c["task"] = {{"prompt", PieceJson(out->task_prompt)}};
  for (size_t i = 0; i <= shards::kMaxRole; ++i) {
    const RoleTemplate& rt = out->roles[i];
    c["roles"][shards::RoleName(static_cast<shards::Role>(i))] = {
        {"prefix", PieceJson(rt.prefix)},
        {"suffix", PieceJson(rt.suffix)},
        {"audio_prefix", PieceJson(rt.audio_prefix)},
        {"audio_suffix", PieceJson(rt.audio_suffix)},
        {"audio_position", rt.audio_after_text ? "after_text" : "before_text"},
        {"loss", rt.loss}};
  }
  out->canonical = c.dump();
  out->checksum = shards::Checksum(out->canonical.data(), out->canonical.size());
  return Status::OK();
}

Status ResolveChatTemplate(const features::Tokenizer& tokenizer, ChatTemplate* t) {
  for (RoleTemplate& r : t->roles) {
    SLUICE_RETURN_IF_ERROR(Resolve(tokenizer, &r.prefix));
    SLUICE_RETURN_IF_ERROR(Resolve(tokenizer, &r.suffix));
    SLUICE_RETURN_IF_ERROR(Resolve(tokenizer, &r.audio_prefix));
    SLUICE_RETURN_IF_ERROR(Resolve(tokenizer, &r.audio_suffix));
  }
  SLUICE_RETURN_IF_ERROR(Resolve(tokenizer, &t->placeholder));
  SLUICE_RETURN_IF_ERROR(Resolve(tokenizer, &t->task_prompt));
  t->task_prompt_ids.assign(t->task_prompt.ids.begin(), t->task_prompt.ids.end());
  if (t->has_placeholder && t->placeholder.ids.size() != 1)
    return Status::InvalidArgument(
        "template placeholder \"" + t->placeholder.text + "\" is " +
        std::to_string(t->placeholder.ids.size()) +
        " ids, not one. HINT: name a special token of the tokenizer, or give {\"ids\": [ID]}");
  t->resolved = true;
  return Status::OK();
}

std::array<shards::TurnEntry, 2> AsrTaskEntries(const ChatTemplate& t, uint32_t samples,
                                                uint32_t transcript_tokens) {
  const uint32_t prompt = static_cast<uint32_t>(t.task_prompt_ids.size());
  // The prompt's bytes only say that the turn has text: its ids are the template's.
  return {{{shards::Role::kUser, true, prompt, prompt, samples},
           {shards::Role::kAssistant, false, transcript_tokens, transcript_tokens, 0}}};
}

Status AsrTaskTurns(const ChatTemplate& t, uint32_t samples, std::span<const uint32_t> transcript,
                    std::vector<shards::ConversationTurn>* turns) {
  if (!t.resolved || !t.has_task)
    return Status::InvalidArgument(
        "an ASR record in a conversation mixture needs the template's task prompt. HINT: "
        "\"task\": {\"prompt\": \"Transcribe the audio.\"} (docs/conversations.md, "
        "\"Templates\")");
  const std::array<shards::TurnEntry, 2> entries =
      AsrTaskEntries(t, samples, static_cast<uint32_t>(transcript.size()));
  turns->assign(2, shards::ConversationTurn());
  for (size_t i = 0; i < 2; ++i) {
    (*turns)[i].entry = entries[i];
    (*turns)[i].ids_stored = true;
  }
  (*turns)[0].tokens = t.task_prompt_ids;
  (*turns)[1].tokens = transcript;
  return Status::OK();
}

Status RenderConversation(const ChatTemplate& t, std::span<const shards::ConversationTurn> turns,
                          const FramesFn& frames, RenderedConversation* out) {
  if (!t.resolved)
    return Status::InvalidArgument("RenderConversation: the template is not resolved");
  out->ids.clear();
  out->loss.clear();
  out->spans.clear();
  for (size_t i = 0; i < turns.size(); ++i) {
    const shards::ConversationTurn& turn = turns[i];
    const RoleTemplate& rt = t.roles[static_cast<size_t>(turn.entry.role)];
    if (turn.entry.text_bytes > 0 && !turn.ids_stored)
      return Status::InvalidArgument("turn " + std::to_string(i) +
                                     ": text without token ids. HINT: shardify conversations "
                                     "--tokenizer hf:PATH/tokenizer.json");
    if (turn.entry.has_audio && !t.has_placeholder)
      return Status::InvalidArgument("turn " + std::to_string(i) +
                                     ": an audio turn, and the template has no placeholder to "
                                     "fill its span. HINT: \"placeholder\": \"<|audio|>\"");
    Append(rt.prefix, false, out);
    auto audio = [&] {
      if (!turn.entry.has_audio) return;
      Append(rt.audio_prefix, false, out);
      const uint64_t n = frames(turn.entry.samples);
      out->spans.push_back({static_cast<uint32_t>(i), out->ids.size(), n});
      out->ids.insert(out->ids.end(), n, t.placeholder.ids[0]);
      out->loss.insert(out->loss.end(), n, 0);
      Append(rt.audio_suffix, false, out);
    };
    if (!rt.audio_after_text) audio();
    for (size_t k = 0; k < turn.tokens.size(); ++k) {
      const uint32_t id = turn.tokens[k];
      if (id > static_cast<uint32_t>(INT32_MAX))
        return Status::InvalidArgument(
            "turn " + std::to_string(i) + ", token " + std::to_string(k) + ": id " +
            std::to_string(id) + " is beyond what an int32 batch holds (a vocabulary over 2^31)");
      out->ids.push_back(static_cast<int32_t>(id));
      out->loss.push_back(rt.loss ? 1 : 0);
    }
    if (rt.audio_after_text) audio();
    Append(rt.suffix, rt.loss, out);
  }
  return Status::OK();
}

}  // namespace sluice::loader
