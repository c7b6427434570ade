// Byte-level BPE behind the Tokenizer interface: the tokenizers of today's LLMs, read from HF
// `tokenizer.json` (tokenizer_json.h) or a tiktoken rank file (tiktoken_file.h). Both fill a
// BpeTokenizerSpec; MakeBpeTokenizer checks it and compiles its regexes.
//
// Encode, as HF tokenizers' encode(text, add_special_tokens) and tiktoken's
// encode(text, allowed_special="all"):
//   0. with add_special_tokens, prefix_ids first and suffix_ids last (the post-processor's);
//   1. added/special tokens are found first (leftmost, longest) and never split;
//   2. the text between them is normalised (NFC, NFKC or nothing);
//   3. pre-tokenized: Split steps with a regex or string, ByteLevel's prefix space and regex;
//   4. each pre-token goes through the BPE merges (bpe_model.h, cached per pre-token).
// Text must be valid UTF-8: invalid bytes are refused with their offset (HF's Python API and
// tiktoken take str, so there is nothing to agree with; decode with errors="replace" first to
// get their handling of such bytes).
//
// Ids are the file's own (Tokenizer::ids_are_the_files()): no blank, and the end-of-document id
// is the file's end-of-text token.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "features/bpe_model.h"
#include "features/pretokenize_regex.h"
#include "features/tokenizer.h"

namespace sluice::features {

enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

struct PreTokenizeStep {
  enum class Kind { kSplit, kPrefixSpace } kind = Kind::kSplit;
  // kSplit: a regex (or a literal string) whose matches cut the pre-token, kept or dropped per
  // `behavior`; invert: the pieces between matches are the "matches".
  std::string pattern;
  bool literal = false;
  SplitBehavior behavior = SplitBehavior::kIsolated;
  bool invert = false;
  std::string where;  // JSON path or pattern name, for errors
};

struct AddedToken {
  std::string content;
  int32_t id = -1;
};

struct BpeTokenizerSpec {
  std::string type;  // "hf" or "tiktoken": Tokenizer::type()
  std::string name;  // the file, for errors
  RegexDialect dialect = RegexDialect::kOniguruma;
  enum class Normalization { kNone, kNfc, kNfkc } normalization = Normalization::kNone;
  std::vector<PreTokenizeStep> steps;
  BpeModelSpec model;
  std::vector<AddedToken> added;  // matched in the text before anything else
  // Every id's bytes for Decode (a missing id: an empty entry and !has_id).
  std::vector<std::string> decode;
  std::vector<bool> has_id;
  int32_t end_of_document_id = -1;
  // The post-processor's tokens around a single text (HF's TemplateProcessing "single").
  std::vector<int32_t> prefix_ids, suffix_ids;
  bool add_special_tokens = false;
};

Status MakeBpeTokenizer(BpeTokenizerSpec spec, std::unique_ptr<Tokenizer>* out);

}  // namespace sluice::features
