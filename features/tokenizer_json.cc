#include "features/tokenizer_json.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "features/byte_level.h"
#include "features/utf8.h"

namespace sluice::features {
namespace {

using nlohmann::json;

// GPT-2's pattern, which HF's ByteLevel applies when use_regex is true.
constexpr const char* kByteLevelPattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

class Parser {
 public:
  Parser(const std::string& name, const HfTokenizerOptions& options)
      : name_(name), options_(options) {}

  Status Unsupported(const std::string& path, const std::string& what,
                     const std::string& supported) const {
    return Status::InvalidArgument(name_ + ": " + path + " " + what +
                                   " is not supported (supported: " + supported + ")");
  }
  Status Bad(const std::string& path, const std::string& what) const {
    return Status::Corruption(name_ + ": " + path + ": " + what);
  }

  // The "type" of a component, or "" with *status set.
  std::string Type(const json& j, const std::string& path, Status* status) const {
    if (!j.is_object() || !j.contains("type") || !j["type"].is_string()) {
      *status = Bad(path, "expected an object with a \"type\"");
      return "";
    }
    return j["type"].get<std::string>();
  }

  bool Flag(const json& j, const char* key, bool fallback) const {
    return j.contains(key) && j[key].is_boolean() ? j[key].get<bool>() : fallback;
  }

  Status Normalizer(const json& j, const std::string& path, BpeTokenizerSpec* s) const {
    if (j.is_null()) return Status::OK();
    Status st;
    const std::string type = Type(j, path, &st);
    SLUICE_RETURN_IF_ERROR(st);
    using N = BpeTokenizerSpec::Normalization;
    if (type == "NFC" || type == "NFKC") {
      const N n = type == "NFC" ? N::kNfc : N::kNfkc;
      if (s->normalization != N::kNone && s->normalization != n)
        return Unsupported(path + ".type", "\"" + type + "\" after another form",
                           "one of NFC, NFKC");
      s->normalization = n;
      return Status::OK();
    }
    if (type == "Sequence") {
      const json& list = j.value("normalizers", json());
      if (!list.is_array()) return Bad(path + ".normalizers", "expected an array");
      for (size_t i = 0; i < list.size(); ++i)
        SLUICE_RETURN_IF_ERROR(
            Normalizer(list[i], path + ".normalizers[" + std::to_string(i) + "]", s));
      return Status::OK();
    }
    return Unsupported(path + ".type", "\"" + type + "\"", "NFC, NFKC, Sequence");
  }

  Status PreTokenizer(const json& j, const std::string& path, BpeTokenizerSpec* s,
                      bool* byte_level) const {
    if (j.is_null()) return Status::OK();
    Status st;
    const std::string type = Type(j, path, &st);
    SLUICE_RETURN_IF_ERROR(st);
    if (*byte_level) {
      // HF maps the bytes to its alphabet inside ByteLevel; a step after it would see the
      // alphabet, not the text, which sluice (working on bytes) does not reproduce.
      return Unsupported(path, "after a ByteLevel pre-tokenizer", "ByteLevel as the last step");
    }
    if (type == "ByteLevel") {
      if (Flag(j, "add_prefix_space", true))
        s->steps.push_back({PreTokenizeStep::Kind::kPrefixSpace, "", false,
                            SplitBehavior::kIsolated, false, path});
      if (Flag(j, "use_regex", true))
        s->steps.push_back({PreTokenizeStep::Kind::kSplit, kByteLevelPattern, false,
                            SplitBehavior::kIsolated, false, path + " (GPT-2's regex)"});
      *byte_level = true;
      return Status::OK();
    }
    if (type == "Split") {
      PreTokenizeStep step;
      step.where = path + ".pattern";
      const json& p = j.value("pattern", json());
      if (p.is_object() && p.contains("Regex") && p["Regex"].is_string()) {
        step.pattern = p["Regex"].get<std::string>();
      } else if (p.is_object() && p.contains("String") && p["String"].is_string()) {
        step.pattern = p["String"].get<std::string>();
        step.literal = true;
      } else {
        return Bad(path + ".pattern", "expected {\"Regex\": ...} or {\"String\": ...}");
      }
      const std::string behavior = j.value("behavior", std::string());
      static const std::pair<const char*, SplitBehavior> kBehaviors[] = {
          {"Removed", SplitBehavior::kRemoved},
          {"Isolated", SplitBehavior::kIsolated},
          {"MergedWithPrevious", SplitBehavior::kMergedWithPrevious},
          {"MergedWithNext", SplitBehavior::kMergedWithNext},
          {"Contiguous", SplitBehavior::kContiguous}};
      bool known = false;
      for (const auto& [n, b] : kBehaviors) {
        if (behavior == n) {
          step.behavior = b;
          known = true;
        }
      }
      if (!known) {
        return Unsupported(path + ".behavior", "\"" + behavior + "\"",
                           "Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous");
      }
      step.invert = Flag(j, "invert", false);
      s->steps.push_back(step);
      return Status::OK();
    }
    if (type == "Sequence") {
      const json& list = j.value("pretokenizers", json());
      if (!list.is_array()) return Bad(path + ".pretokenizers", "expected an array");
      for (size_t i = 0; i < list.size(); ++i)
        SLUICE_RETURN_IF_ERROR(PreTokenizer(
            list[i], path + ".pretokenizers[" + std::to_string(i) + "]", s, byte_level));
      return Status::OK();
    }
    return Unsupported(path + ".type", "\"" + type + "\"", "ByteLevel, Split, Sequence");
  }

  // The tokens a post-processor puts around a single text (HF's add_special_tokens=True);
  // a Sequence applies its processors in order, each wrapping what the ones before made.
  // ByteLevel changes offsets only. The pair template is never used: sluice encodes one text.
  Status PostProcessor(const json& j, const std::string& path, std::vector<int32_t>* prefix,
                       std::vector<int32_t>* suffix) const {
    if (j.is_null()) return Status::OK();
    Status st;
    const std::string type = Type(j, path, &st);
    SLUICE_RETURN_IF_ERROR(st);
    if (type == "ByteLevel") return Status::OK();
    if (type == "TemplateProcessing") return Template(j, path, prefix, suffix);
    if (type == "RobertaProcessing" || type == "BertProcessing") {
      int32_t cls = -1, sep = -1;
      SLUICE_RETURN_IF_ERROR(TokenPair(j, "cls", path, &cls));
      SLUICE_RETURN_IF_ERROR(TokenPair(j, "sep", path, &sep));
      prefix->insert(prefix->begin(), cls);
      suffix->push_back(sep);
      return Status::OK();
    }
    if (type == "Sequence") {
      const json& list = j.value("processors", json());
      if (!list.is_array()) return Bad(path + ".processors", "expected an array");
      for (size_t i = 0; i < list.size(); ++i)
        SLUICE_RETURN_IF_ERROR(PostProcessor(
            list[i], path + ".processors[" + std::to_string(i) + "]", prefix, suffix));
      return Status::OK();
    }
    return Unsupported(path + ".type", "\"" + type + "\"",
                       "ByteLevel, TemplateProcessing, RobertaProcessing, BertProcessing, "
                       "Sequence");
  }

  // RobertaProcessing's and BertProcessing's "cls"/"sep": ["<s>", 0].
  Status TokenPair(const json& j, const char* key, const std::string& path, int32_t* id) const {
    const json& v = j.value(key, json());
    if (!v.is_array() || v.size() != 2 || !v[0].is_string() || !v[1].is_number_integer())
      return Bad(path + "." + key, "expected [\"token\", id]");
    *id = v[1].get<int32_t>();
    return Status::OK();
  }

  // TemplateProcessing's "single": special tokens around exactly one {"Sequence": {"id": "A"}},
  // each token's ids from "special_tokens".
  Status Template(const json& j, const std::string& path, std::vector<int32_t>* prefix,
                  std::vector<int32_t>* suffix) const {
    const json& single = j.value("single", json());
    if (!single.is_array()) return Bad(path + ".single", "expected an array of pieces");
    const json& specials = j.value("special_tokens", json::object());
    if (!specials.is_object()) return Bad(path + ".special_tokens", "expected an object");
    std::vector<int32_t> before, after;
    bool seen_sequence = false;
    for (size_t i = 0; i < single.size(); ++i) {
      const json& piece = single[i];
      const std::string at = path + ".single[" + std::to_string(i) + "]";
      if (piece.is_object() && piece.contains("Sequence")) {
        const json& seq = piece["Sequence"];
        if (!seq.is_object() || seq.value("id", std::string()) != "A")
          return Unsupported(at + ".Sequence.id", seq.dump().substr(0, 60),
                             "\"A\" (a single text)");
        if (seen_sequence) return Unsupported(at, "a second $A", "one $A");
        seen_sequence = true;
        continue;
      }
      if (!piece.is_object() || !piece.contains("SpecialToken") ||
          !piece["SpecialToken"].is_object() || !piece["SpecialToken"].contains("id") ||
          !piece["SpecialToken"]["id"].is_string())
        return Bad(at, "expected {\"SpecialToken\": {\"id\": ...}} or {\"Sequence\": ...}");
      const std::string name = piece["SpecialToken"]["id"].get<std::string>();
      const json& entry = specials.value(name, json());
      if (!entry.is_object() || !entry.contains("ids") || !entry["ids"].is_array())
        return Bad(path + ".special_tokens",
                   "\"" + name + "\" (used by " + at + ") has no \"ids\"");
      for (const json& id : entry["ids"]) {
        if (!id.is_number_integer()) return Bad(path + ".special_tokens." + name, "ids: not ids");
        (seen_sequence ? after : before).push_back(id.get<int32_t>());
      }
    }
    if (!seen_sequence) return Bad(path + ".single", "has no {\"Sequence\": {\"id\": \"A\"}}");
    prefix->insert(prefix->begin(), before.begin(), before.end());
    suffix->insert(suffix->end(), after.begin(), after.end());
    return Status::OK();
  }

  Status Model(const json& m, BpeTokenizerSpec* s, std::vector<std::string>* by_id) const {
    if (!m.is_object()) return Bad("model", "expected an object");
    const std::string type = m.value("type", std::string("BPE"));
    if (type != "BPE") return Unsupported("model.type", "\"" + type + "\"", "BPE");
    if (m.contains("dropout") && !m["dropout"].is_null())
      return Unsupported("model.dropout", m["dropout"].dump(), "null (no dropout)");
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
      if (m.contains(key) && !m[key].is_null() && m[key] != "")
        return Unsupported(std::string("model.") + key, m[key].dump(), "null");
    }
    BpeModelSpec& ms = s->model;
    ms.name = name_;
    ms.byte_symbols = true;
    ms.byte_fallback = Flag(m, "byte_fallback", false);
    ms.ignore_merges = Flag(m, "ignore_merges", false);
    ms.fuse_unk = Flag(m, "fuse_unk", false);
    const json& vocab = m.value("vocab", json());
    if (!vocab.is_object()) return Bad("model.vocab", "expected an object of token: id");
    std::unordered_map<std::string, int32_t> ids;
    for (auto it = vocab.begin(); it != vocab.end(); ++it) {
      if (!it.value().is_number_integer() || it.value().get<int64_t>() < 0 ||
          it.value().get<int64_t>() > (1 << 30))
        return Bad("model.vocab[\"" + it.key() + "\"]", "expected an id in [0, 2^30]");
      const auto id = it.value().get<int32_t>();
      ids[it.key()] = id;
      if (static_cast<size_t>(id) >= by_id->size()) by_id->resize(id + 1);
      if (!(*by_id)[id].empty())
        return Bad("model.vocab[\"" + it.key() + "\"]", "id " + std::to_string(id) + " used twice");
      (*by_id)[id] = it.key();
    }
    // Tokens in the byte-level alphabet become their bytes; any other token can never come out
    // of byte-level symbols, so the model leaves it out (Decode keeps its text).
    std::vector<bool> reachable(by_id->size(), false);
    for (const auto& [token, id] : ids) {
      std::string raw;
      if (!ByteLevelBytes(token, &raw)) continue;
      reachable[id] = true;
      ms.vocab.emplace_back(std::move(raw), id);
    }
    if (m.contains("unk_token") && !m["unk_token"].is_null()) {
      const std::string unk = m["unk_token"].is_string() ? m["unk_token"].get<std::string>() : "";
      auto it = ids.find(unk);
      if (it == ids.end()) return Bad("model.unk_token", "\"" + unk + "\" is not in the vocab");
      ms.unk_id = it->second;
    }
    const json& merges = m.value("merges", json());
    if (!merges.is_array()) return Bad("model.merges", "expected an array");
    ms.merges.reserve(merges.size());
    for (size_t r = 0; r < merges.size(); ++r) {
      const json& e = merges[r];
      const std::string path = "model.merges[" + std::to_string(r) + "]";
      std::string a, b;
      if (e.is_string()) {  // "a b", split at the first space as HF does
        const std::string t = e.get<std::string>();
        const size_t sp = t.find(' ');
        if (sp == std::string::npos) return Bad(path, "expected \"left right\", got \"" + t + "\"");
        a = t.substr(0, sp);
        b = t.substr(sp + 1);
      } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
        a = e[0].get<std::string>();
        b = e[1].get<std::string>();
      } else {
        return Bad(path, "expected \"left right\" or [\"left\", \"right\"]");
      }
      auto ia = ids.find(a), ib = ids.find(b);
      if (ia == ids.end() || ib == ids.end())
        return Bad(path, "\"" + (ia == ids.end() ? a : b) + "\" is not in the vocab");
      if (ids.find(a + b) == ids.end())
        return Bad(path, "\"" + a + b + "\" (the merged token) is not in the vocab");
      // A merge of unreachable tokens never applies; the ranks of the others keep their order.
      if (reachable[ia->second] && reachable[ib->second])
        ms.merges.emplace_back(ia->second, ib->second);
    }
    return Status::OK();
  }

  // A byte-level token's bytes; false when it has a character outside the alphabet.
  static bool ByteLevelBytes(const std::string& token, std::string* raw) {
    size_t bad = 0;
    if (!ValidUtf8(token, &bad)) return false;
    for (size_t pos = 0; pos < token.size();) {
      const int b = ByteOfByteLevelChar(NextCodePoint(token, &pos));
      if (b < 0) return false;
      raw->push_back(static_cast<char>(b));
    }
    return true;
  }

  Status Parse(const std::string& bytes, BpeTokenizerSpec* s) {
    json j;
    try {
      j = json::parse(bytes);
    } catch (const json::exception& e) {
      return Status::Corruption(name_ + ": not JSON: " + e.what());
    }
    if (!j.is_object()) return Bad("(top)", "expected an object");
    s->type = "hf";
    s->name = name_;
    s->dialect = RegexDialect::kOniguruma;
    for (const char* key : {"truncation", "padding"}) {
      if (j.contains(key) && !j[key].is_null())
        return Unsupported(key, j[key].dump().substr(0, 80),
                           "null (sluice neither truncates nor pads records)");
    }
    std::vector<std::string> by_id;
    SLUICE_RETURN_IF_ERROR(Model(j.value("model", json()), s, &by_id));
    SLUICE_RETURN_IF_ERROR(Normalizer(j.value("normalizer", json()), "normalizer", s));
    bool byte_level = false;
    SLUICE_RETURN_IF_ERROR(
        PreTokenizer(j.value("pre_tokenizer", json()), "pre_tokenizer", s, &byte_level));
    if (!byte_level) {
      return Unsupported("pre_tokenizer", "without ByteLevel",
                         "byte-level BPE; for a SentencePiece model use spm:tokenizer.model");
    }
    const json& decoder = j.value("decoder", json());
    Status st;
    const std::string dtype = decoder.is_null() ? "null" : Type(decoder, "decoder", &st);
    SLUICE_RETURN_IF_ERROR(st);
    if (dtype != "ByteLevel") return Unsupported("decoder.type", "\"" + dtype + "\"", "ByteLevel");

    // Decoding: a vocab token's bytes (its text when outside the alphabet, as HF's ByteLevel
    // decoder does), an added token's text.
    const size_t model_size = by_id.size();
    s->decode.assign(model_size, std::string());
    s->has_id.assign(model_size, false);
    for (size_t id = 0; id < model_size; ++id) {
      if (by_id[id].empty()) continue;
      std::string raw;
      s->decode[id] = ByteLevelBytes(by_id[id], &raw) ? raw : by_id[id];
      s->has_id[id] = true;
    }
    const json& added = j.value("added_tokens", json::array());
    if (!added.is_array()) return Bad("added_tokens", "expected an array");
    for (size_t i = 0; i < added.size(); ++i) {
      const json& a = added[i];
      const std::string path = "added_tokens[" + std::to_string(i) + "]";
      if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() ||
          !a.contains("content") || !a["content"].is_string() || a["id"].get<int64_t>() < 0 ||
          a["id"].get<int64_t>() > (1 << 30))
        return Bad(path, "expected {\"id\": N, \"content\": \"...\"}");
      for (const char* key : {"lstrip", "rstrip", "single_word"}) {
        if (Flag(a, key, false)) return Unsupported(path + "." + key, "true", "false");
      }
      AddedToken t{a["content"].get<std::string>(), a["id"].get<int32_t>()};
      if (Flag(a, "special", false)) special_.push_back(t);
      size_t bad = 0;
      if (t.content.empty() || !ValidUtf8(t.content, &bad))
        return Bad(path + ".content", "empty or not UTF-8");
      if (static_cast<size_t>(t.id) >= s->decode.size()) {
        s->decode.resize(t.id + 1);
        s->has_id.resize(t.id + 1, false);
      }
      if (t.id < static_cast<int32_t>(model_size) && !by_id[t.id].empty() &&
          by_id[t.id] != t.content) {
        return Bad(path, "id " + std::to_string(t.id) + " is \"" + by_id[t.id] +
                             "\" in model.vocab but \"" + t.content + "\" here");
      }
      s->decode[t.id] = t.content;
      s->has_id[t.id] = true;
      s->added.push_back(std::move(t));
    }
    SLUICE_RETURN_IF_ERROR(PostProcessor(j.value("post_processor", json()), "post_processor",
                                         &s->prefix_ids, &s->suffix_ids));
    s->add_special_tokens = options_.add_special_tokens;
    return EndOfDocument(by_id, s);
  }

  // An explicit token; else the last token the post-processor appends (what the file ends a
  // text with); else the one special added token named like an end of text; else <|im_end|>.
  Status EndOfDocument(const std::vector<std::string>& by_id, BpeTokenizerSpec* s) const {
    const std::string& want = options_.end_of_document_token;
    if (!want.empty()) {
      for (const AddedToken& t : s->added) {
        if (t.content == want) s->end_of_document_id = t.id;
      }
      for (size_t id = 0; id < by_id.size() && s->end_of_document_id < 0; ++id) {
        if (by_id[id] == want) s->end_of_document_id = static_cast<int32_t>(id);
      }
      if (s->end_of_document_id < 0)
        return Status::InvalidArgument(name_ + ": the end-of-document token \"" + want +
                                       "\" is not a token of the file");
      return Status::OK();
    }
    if (!s->suffix_ids.empty()) {
      s->end_of_document_id = s->suffix_ids.back();
      return Status::OK();
    }
    std::vector<const AddedToken*> found;
    for (const AddedToken& t : special_) {
      for (const char* eot : kEndOfTextTokens) {
        // The same token listed twice is one candidate, not an ambiguity.
        const bool again = std::any_of(found.begin(), found.end(),
                                       [&](const AddedToken* f) { return f->id == t.id; });
        if (t.content == eot && !again) found.push_back(&t);
      }
    }
    if (found.size() > 1) {
      std::string names;
      for (const AddedToken* t : found)
        names += (names.empty() ? "" : ", ") + t->content + " (id " + std::to_string(t->id) + ")";
      return Status::InvalidArgument(
          name_ + ": the end of a document is ambiguous: special added_tokens " + names +
          " all name an end of text; hint: choose one (shardify --eod-token, "
          "HfTokenizerOptions::end_of_document_token)");
    }
    if (found.empty()) {
      for (const AddedToken& t : special_) {
        if (t.content == kEndOfTurnToken) found.push_back(&t);
      }
    }
    if (found.empty()) {
      std::string known;
      for (const char* eot : kEndOfTextTokens)
        known += std::string(known.empty() ? "" : ", ") + eot;
      return Status::InvalidArgument(
          name_ +
          ": no end-of-document token: the post-processor appends none and no special "
          "added token is named like an end of text (" +
          known + ", or " + kEndOfTurnToken +
          "); hint: name one (shardify --eod-token, HfTokenizerOptions::end_of_document_token)");
    }
    s->end_of_document_id = found[0]->id;
    return Status::OK();
  }

 private:
  std::string name_;
  HfTokenizerOptions options_;
  std::vector<AddedToken> special_;  // the added tokens with "special": true
};

}  // namespace

Status ParseTokenizerJson(const std::string& bytes, const std::string& name,
                          const HfTokenizerOptions& options, BpeTokenizerSpec* spec) {
  BpeTokenizerSpec s;
  SLUICE_RETURN_IF_ERROR(Parser(name, options).Parse(bytes, &s));
  *spec = std::move(s);
  return Status::OK();
}

Status MakeHfTokenizer(const std::string& json_bytes, const std::string& name,
                       const HfTokenizerOptions& options, std::unique_ptr<Tokenizer>* out) {
  BpeTokenizerSpec spec;
  SLUICE_RETURN_IF_ERROR(ParseTokenizerJson(json_bytes, name, options, &spec));
  return MakeBpeTokenizer(std::move(spec), out);
}

Status MakeHfTokenizer(const std::string& json_bytes, const std::string& name,
                       std::unique_ptr<Tokenizer>* out) {
  return MakeHfTokenizer(json_bytes, name, HfTokenizerOptions{}, out);
}

}  // namespace sluice::features
