// A dataset's tokenizer, as shardify --tokenizer recorded it in manifest.json
// ("tokenizer", docs/formats/manifest.md): the one place that reads that
// description, for the loader's online tokenization, sluice-train and the tools.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "features/text_normalize.h"
#include "features/tokenizer.h"
#include "loader/options.h"
#include "shards/manifest.h"
#include "shards/storage.h"

namespace sluice::loader {

// The tokenizer file's name inside a dataset directory, per type: the SentencePiece model, HF's
// tokenizer.json, a tiktoken rank file. A dataset holds at most one (manifest.json "file").
inline constexpr const char* kTokenizerModelName = "tokenizer.model";
inline constexpr const char* kTokenizerJsonName = "tokenizer.json";
inline constexpr const char* kTiktokenFileName = "tokenizer.tiktoken";
inline constexpr const char* kTokenizerFileNames[] = {kTokenizerModelName, kTokenizerJsonName,
                                                      kTiktokenFileName};
inline bool IsTokenizerFileName(std::string_view name) {
  for (const char* n : kTokenizerFileNames)
    if (name == n) return true;
  return false;
}

// manifest.json's "normalize" object, both ways (the keys of TextNormalizeOptions).
nlohmann::json TextNormalizeToJson(const features::TextNormalizeOptions& n);
features::TextNormalizeOptions TextNormalizeFromJson(
    const nlohmann::json& j);  // throws json errors

// How two datasets' tokenizer descriptions (manifest.json "tokenizer", null when none) differ in
// what their ids mean: empty when they agree, else the first key that differs and both values
// ("add_special_tokens false vs true"; a value over 40 characters, such as a char vocabulary, as
// its XXH3). Every key is compared except the provenance: `given` and `trained` (the file's
// XXH3 says which model it is) and `end_of_document_token` (the file and end_of_document_id fix
// it); `add_special_tokens` and `allow_unknown` absent are false (docs/formats/manifest.md).
// Mixtures and shardify merge compare with it: one tokenizer serves datasets that agree.
std::string TokenizerDifference(const nlohmann::json& a, const nlohmann::json& b);

// Re-creates the tokenizer from its manifest description and the dataset's files, wherever they
// live (a directory, an HTTP or S3 prefix: storage/open.h): the tokenizer file (SentencePiece
// model, tokenizer.json, tiktoken ranks) is read through `storage`, checked against its XXH3. Corruption naming the manifest or model file
// (Storage::Where) for anything inconsistent; the storage's own error when the model cannot be
// read.
Status LoadDatasetTokenizer(const nlohmann::json& description, const shards::Storage& storage,
                            std::unique_ptr<features::Tokenizer>* out);
// The same for the local dataset directory `dir`.
Status LoadDatasetTokenizer(const nlohmann::json& description, const std::string& dir,
                            std::unique_ptr<features::Tokenizer>* out);

// The loader's hook around a tokenizer: the ids a record would store. With end_of_document
// (text datasets: shardify text appends it to every line or document) the ids are followed by
// the tokenizer's end_of_document_id() (1, or the file's end-of-text token for hf/tiktoken);
// transcripts (audio datasets) get the ids alone.
Tokenizer MakeRecordTokenizer(std::shared_ptr<const features::Tokenizer> tokenizer,
                              bool end_of_document);

// The tokenizer of the dataset in `storage` (its manifest: `manifest`) as that hook, for records
// that hold text without ids; end_of_document as in MakeRecordTokenizer: true for the records of
// a text dataset. InvalidArgument when manifest.json names no tokenizer; else as
// LoadDatasetTokenizer.
Status LoadRecordTokenizer(const shards::Manifest& manifest, const shards::Storage& storage,
                           bool end_of_document, Tokenizer* out);

}  // namespace sluice::loader
