// --tokenizer for shardify: builds or loads the dataset's tokenizer before the
// ingest starts, so every record's token ids come from one tokenizer, and
// describes it for manifest.json (docs/formats/manifest.md, "tokenizer").
//
//   char           character vocabulary of the normalised transcripts
//   bpe:N          SentencePiece BPE with N pieces, trained on the transcripts
//   unigram:N      SentencePiece unigram, likewise
//   spm:PATH       a trained SentencePiece .model file
//   hf:PATH        an HF tokenizer.json (byte-level BPE: GPT-2, Llama 3, Qwen2, Mistral Nemo, ...)
//   tiktoken:PATH[:ENCODING]
//                  a tiktoken rank file with ENCODING's regex and special tokens (r50k_base,
//                  p50k_base, cl100k_base, o200k_base; left out: taken from the file's name)
//
// hf and tiktoken ids are the file's own (features/tokenizer.h): the records' ids index the
// pretrained model's embeddings; the file's own normaliser applies, not --keep-case/-punctuation.
//
// Training uses every transcript of the input (not only this --part), so the
// parts of a --part i/N run share one tokenizer and merge.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "features/tokenizer.h"

namespace sluice::shardify {

struct TokenizerArgs {
  std::string spec;        // empty: no tokenization
  bool keep_case = false;  // --keep-case: no lowercasing
  bool keep_punctuation = false;
  bool allow_unknown = false;  // spm:PATH only: text that maps to <unk> is kept, not rejected
  bool add_special_tokens = true;     // hf only: the post-processor's tokens (HF's default)
  std::string end_of_document_token;  // hf only: empty: the file's (tokenizer.h)
  int seed = 1;                // SentencePiece training seed
};

struct DatasetTokenizer {
  std::unique_ptr<features::Tokenizer> tokenizer;
  nlohmann::json description;  // manifest.json "tokenizer"
  std::string model_bytes;     // the tokenizer file to store as DIR/file_name (empty for char)
  std::string file_name;  // loader::kTokenizerModelName, kTokenizerJsonName or kTiktokenFileName
};

// Builds the tokenizer named by args.spec from `texts` (all transcripts). Its
// description is what loader::LoadDatasetTokenizer reads back.
Status PrepareTokenizer(const TokenizerArgs& args, const std::vector<std::string>& texts,
                        DatasetTokenizer* out);

}  // namespace sluice::shardify
