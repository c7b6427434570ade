#include "loader/dataset_tokenizer.h"

#include <string>
#include <vector>

#include "shards/checksum.h"
#include "shards/storage.h"

namespace sluice::loader {

nlohmann::json TextNormalizeToJson(const features::TextNormalizeOptions& n) {
  return {{"lowercase", n.lowercase},
          {"strip_punctuation", n.strip_punctuation},
          {"collapse_whitespace", n.collapse_whitespace}};
}

features::TextNormalizeOptions TextNormalizeFromJson(const nlohmann::json& j) {
  features::TextNormalizeOptions n;
  n.lowercase = j.at("lowercase").get<bool>();
  n.strip_punctuation = j.at("strip_punctuation").get<bool>();
  n.collapse_whitespace = j.at("collapse_whitespace").get<bool>();
  return n;
}

std::string TokenizerDifference(const nlohmann::json& a, const nlohmann::json& b) {
  if (a.is_null() != b.is_null())
    return a.is_null() ? "none vs a tokenizer" : "a tokenizer vs none";
  if (a.is_null() || a == b) return "";
  if (!a.is_object() || !b.is_object()) return a.dump() + " vs " + b.dump();
  const auto ignored = [](const std::string& key) {
    return key == "given" || key == "trained" || key == "end_of_document_token";
  };
  const auto value = [](const nlohmann::json& d, const std::string& key) {
    if (d.contains(key)) return d[key];
    if (key == "add_special_tokens" || key == "allow_unknown") return nlohmann::json(false);
    return nlohmann::json();  // absent
  };
  const auto shown = [](const nlohmann::json& v) {
    if (v.is_null()) return std::string("none");
    const std::string s = v.dump();
    if (s.size() <= 40) return s;
    return "xxh3 " + shards::ChecksumHex(shards::Checksum(s.data(), s.size()));
  };
  // "type" first: the other keys mean little between two types.
  std::vector<std::string> keys = {"type"};
  for (const nlohmann::json* d : {&a, &b})
    for (auto it = d->begin(); it != d->end(); ++it)
      if (it.key() != "type" && !ignored(it.key())) keys.push_back(it.key());
  for (const std::string& key : keys) {
    const nlohmann::json va = value(a, key), vb = value(b, key);
    if (va != vb) {
      const std::string x = shown(va), y = shown(vb);
      // A long value is named by its XXH3 once: "vocab xxh3 X vs xxh3 Y" reads as "xxh3 X vs Y".
      if (x.rfind("xxh3 ", 0) == 0 && y.rfind("xxh3 ", 0) == 0)
        return key + " xxh3 " + x.substr(5) + " vs " + y.substr(5);
      return key + " " + x + " vs " + y;
    }
  }
  return "";
}

Status LoadDatasetTokenizer(const nlohmann::json& d, const shards::Storage& storage,
                            std::unique_ptr<features::Tokenizer>* out) {
  const std::string where = storage.Where(shards::kManifestName) + ": tokenizer";
  // nlohmann casts a float to int with static_cast, undefined beyond int's range
  // ("vocab_size": 3.2e63 in tokenizer_fuzzer under UBSan).
  if (d.is_object() && d.contains("vocab_size") && d["vocab_size"].is_number_float())
    return Status::Corruption(where + ": vocab_size must be an integer");
  try {
    const auto norm = TextNormalizeFromJson(d.at("normalize"));
    const std::string type = d.at("type").get<std::string>();
    if (type == "char") {
      Status s =
          features::MakeCharTokenizer(d.at("vocab").get<std::vector<std::string>>(), norm, out);
      if (!s.ok()) return Status::Corruption(where + ": " + s.message());
    } else if (type == "sentencepiece" || type == "hf" || type == "tiktoken") {
      const std::string file = d.at("file").get<std::string>();
      const std::string path = storage.Where(file);
      std::string bytes;
      SLUICE_RETURN_IF_ERROR(storage.ReadFile(file, &bytes));
      if (shards::ChecksumHex(shards::Checksum(bytes.data(), bytes.size())) !=
          d.at("xxh3").get<std::string>()) {
        return Status::Corruption(
            path + ": checksum does not match manifest.json (damaged or replaced tokenizer file)");
      }
      if (type == "sentencepiece") {
        SLUICE_RETURN_IF_ERROR(features::MakeSentencePieceTokenizer(
            bytes, path, norm, d.value("allow_unknown", false), out));
      } else if (type == "hf") {
        // A dataset written before the switch was recorded was encoded without the
        // post-processor's tokens.
        features::HfTokenizerOptions o;
        o.add_special_tokens = d.value("add_special_tokens", false);
        o.end_of_document_token = d.value("end_of_document_token", std::string());
        SLUICE_RETURN_IF_ERROR(features::MakeHfTokenizer(bytes, path, o, out));
      } else {
        SLUICE_RETURN_IF_ERROR(features::MakeTiktokenTokenizer(
            bytes, path, d.at("encoding").get<std::string>(), out));
      }
      // The ids stored in the shards were made with this end-of-document id.
      if (d.contains("end_of_document_id") &&
          d["end_of_document_id"].get<int>() != (*out)->end_of_document_id()) {
        return Status::Corruption(where + ": end_of_document_id " +
                                  std::to_string(d["end_of_document_id"].get<int>()) + " but " +
                                  path + " gives " +
                                  std::to_string((*out)->end_of_document_id()));
      }
    } else {
      return Status::Unsupported(where + ": unknown type '" + type + "'");
    }
    if ((*out)->vocab_size() != d.at("vocab_size").get<int>()) {
      return Status::Corruption(where + ": vocab_size " +
                                std::to_string(d.at("vocab_size").get<int>()) +
                                " but the tokenizer has " + std::to_string((*out)->vocab_size()));
    }
  } catch (const nlohmann::json::exception& e) {
    return Status::Corruption(where + ": " + e.what());
  }
  return Status::OK();
}

Status LoadDatasetTokenizer(const nlohmann::json& description, const std::string& dir,
                            std::unique_ptr<features::Tokenizer>* out) {
  return LoadDatasetTokenizer(description, *shards::NewLocalStorage(dir), out);
}

Tokenizer MakeRecordTokenizer(std::shared_ptr<const features::Tokenizer> tokenizer,
                              bool end_of_document) {
  return [tokenizer, end_of_document](std::string_view text, std::vector<int32_t>* ids) {
    ids->clear();
    SLUICE_RETURN_IF_ERROR(tokenizer->Encode(text, ids));
    if (end_of_document && !tokenizer->encode_ends_document())
      ids->push_back(tokenizer->end_of_document_id());
    return Status::OK();
  };
}

Status LoadRecordTokenizer(const shards::Manifest& m, const shards::Storage& storage,
                           bool end_of_document, Tokenizer* out) {
  if (m.tokenizer->is_null())
    return Status::InvalidArgument(storage.Where(shards::kManifestName) + " names no tokenizer");
  std::unique_ptr<features::Tokenizer> t;
  SLUICE_RETURN_IF_ERROR(LoadDatasetTokenizer(*m.tokenizer, storage, &t));
  *out = MakeRecordTokenizer(std::move(t), end_of_document);
  return Status::OK();
}

}  // namespace sluice::loader
