#include "tokenize.h"

#include "loader/dataset_tokenizer.h"

#include "base/file.h"
#include "features/bpe_file_spec.h"
#include "shards/checksum.h"

namespace sluice::shardify {
namespace {

Status ParseCount(const std::string& spec, const std::string& prefix, int* n) {
  try {
    size_t used = 0;
    *n = std::stoi(spec.substr(prefix.size()), &used);
    if (used + prefix.size() != spec.size() || *n < 4) throw std::invalid_argument("");
  } catch (const std::exception&) {
    return Status::InvalidArgument("--tokenizer '" + spec + "': expected " + prefix +
                                   "N with N >= 4, e.g. " + prefix + "500");
  }
  return Status::OK();
}

}  // namespace

Status PrepareTokenizer(const TokenizerArgs& a, const std::vector<std::string>& texts,
                        DatasetTokenizer* out) {
  features::TextNormalizeOptions norm;
  norm.lowercase = !a.keep_case;
  norm.strip_punctuation = !a.keep_punctuation;
  nlohmann::json d = {{"normalize", loader::TextNormalizeToJson(norm)}};
  if (a.spec == "char") {
    std::vector<std::string> chars;
    SLUICE_RETURN_IF_ERROR(features::BuildCharVocabulary(texts, norm, &chars));
    SLUICE_RETURN_IF_ERROR(features::MakeCharTokenizer(chars, norm, &out->tokenizer));
    d["type"] = "char";
    d["vocab"] = chars;
  } else if (a.spec.rfind("bpe:", 0) == 0 || a.spec.rfind("unigram:", 0) == 0) {
    features::SentencePieceTrainOptions t;
    t.model_type = a.spec.substr(0, a.spec.find(':'));
    SLUICE_RETURN_IF_ERROR(ParseCount(a.spec, t.model_type + ":", &t.vocab_size));
    t.seed = a.seed;
    SLUICE_RETURN_IF_ERROR(features::TrainSentencePiece(texts, norm, t, &out->model_bytes));
    SLUICE_RETURN_IF_ERROR(features::MakeSentencePieceTokenizer(
        out->model_bytes, loader::kTokenizerModelName, norm, false, &out->tokenizer));
    d["type"] = "sentencepiece";
    d["trained"] = {{"model_type", t.model_type}, {"pieces", t.vocab_size}, {"seed", t.seed}};
  } else if (a.spec.rfind("spm:", 0) == 0) {
    const std::string path = a.spec.substr(4);
    Status s = ReadFileToString(path, &out->model_bytes);
    if (!s.ok()) return Prefixed(s, "--tokenizer " + a.spec);
    SLUICE_RETURN_IF_ERROR(features::MakeSentencePieceTokenizer(out->model_bytes, path, norm,
                                                                a.allow_unknown, &out->tokenizer));
    d["type"] = "sentencepiece";
    d["given"] = path;
    d["allow_unknown"] = a.allow_unknown;
  } else if (features::IsBpeFileSpec(a.spec)) {
    features::BpeFileSpec f;
    SLUICE_RETURN_IF_ERROR(features::ParseBpeFileSpec(a.spec, &f));
    f.hf.add_special_tokens = a.add_special_tokens;
    f.hf.end_of_document_token = a.end_of_document_token;
    SLUICE_RETURN_IF_ERROR(features::LoadBpeFile(f, &out->model_bytes, &out->tokenizer));
    d["type"] = f.type;
    d["given"] = f.path;
    if (f.type == "tiktoken") d["encoding"] = f.encoding;
    if (f.type == "hf") {
      d["add_special_tokens"] = a.add_special_tokens;
      if (!a.end_of_document_token.empty()) d["end_of_document_token"] = a.end_of_document_token;
    }
    out->file_name = f.type == "hf" ? loader::kTokenizerJsonName : loader::kTiktokenFileName;
  } else {
    return Status::InvalidArgument(
        "--tokenizer '" + a.spec +
        "': expected char, bpe:N, unigram:N, spm:PATH, hf:PATH/tokenizer.json or "
        "tiktoken:PATH[:ENCODING]");
  }
  if (out->tokenizer->ids_are_the_files()) {
    // The file says how text is normalised; sluice's lowercasing and punctuation do not apply.
    d["normalize"] = loader::TextNormalizeToJson(out->tokenizer->normalize());
  }
  if (!out->model_bytes.empty()) {
    if (out->file_name.empty()) out->file_name = loader::kTokenizerModelName;
    d["file"] = out->file_name;
    d["xxh3"] =
        shards::ChecksumHex(shards::Checksum(out->model_bytes.data(), out->model_bytes.size()));
  }
  d["vocab_size"] = out->tokenizer->vocab_size();
  const int32_t blank = out->tokenizer->blank_id();
  d["blank_id"] = blank < 0 ? nlohmann::json(nullptr) : nlohmann::json(blank);
  d["end_of_document_id"] = out->tokenizer->end_of_document_id();
  out->description = std::move(d);
  return Status::OK();
}

}  // namespace sluice::shardify
