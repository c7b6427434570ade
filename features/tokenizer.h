// Tokenizers behind one interface: a character vocabulary, SentencePiece (BPE
// or unigram), and the byte-level BPE of LLMs from HF tokenizer.json or a
// tiktoken rank file (bpe_tokenizer.h). The same object encodes offline in
// shardify and online in the loader, so both give the same ids.
//
// Two id layouts:
//  - sluice's, for char and SentencePiece (models trained from scratch, CTC):
//    0 is the CTC blank (never produced by Encode), 1 is the end-of-document
//    token, real tokens start at 2.
//  - the file's own, for "hf" and "tiktoken" (ids_are_the_files()): the ids
//    index a pretrained model's embedding table, so they are exactly the ids
//    of HF tokenizers / tiktoken. There is no blank (blank_id() is -1) and
//    end_of_document_id() is the file's end-of-text token.
// Code that appends or skips these ids asks the tokenizer, never the constants.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "features/text_normalize.h"

namespace sluice::features {

inline constexpr int32_t kBlankId = 0;
inline constexpr int32_t kEndOfDocumentId = 1;
inline constexpr int32_t kFirstTokenId = 2;

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  // Normalises `text` (options()), then appends its ids to *ids. `text` must be
  // valid UTF-8. InvalidArgument naming the character and its byte offset when
  // the vocabulary cannot represent it. Thread-safe.
  virtual Status Encode(std::string_view text, std::vector<int32_t>* ids) const = 0;
  // Text of ids. sluice's layout: blank and end-of-document are skipped; the
  // file's: every id is decoded, special tokens as their text, so
  // Decode(Encode(x)) == x. InvalidArgument for an id outside
  // [0, vocab_size()) or one the file does not assign.
  virtual Status Decode(const int32_t* ids, size_t n, std::string* text) const = 0;
  // Number of ids, blank and end-of-document included (the file's: the largest
  // id plus one).
  virtual int32_t vocab_size() const = 0;
  virtual std::string_view type() const = 0;  // "char", "sentencepiece", "hf" or "tiktoken"
  // The id shardify and the loader append after each document of a text dataset.
  virtual int32_t end_of_document_id() const { return kEndOfDocumentId; }
  // True where Encode itself ends with end_of_document_id() (a tokenizer.json post-processor
  // appends it): code that ends documents then appends nothing, or the id would come twice.
  virtual bool encode_ends_document() const { return false; }
  // The CTC blank, or -1 when the ids are the file's (there is none).
  virtual int32_t blank_id() const { return kBlankId; }
  bool ids_are_the_files() const { return blank_id() < 0; }
  const TextNormalizeOptions& normalize() const { return normalize_; }

 protected:
  TextNormalizeOptions normalize_;
};

// Greedy CTC: collapses runs of the same id and drops blanks, e.g. the argmax
// per frame of a CTC model's output; the result goes to Tokenizer::Decode.
void CtcCollapse(const int32_t* frame_ids, size_t n, std::vector<int32_t>* out);

// ---- Character vocabulary ------------------------------------------------

// `chars` are the vocabulary's characters in id order (id = kFirstTokenId + i),
// each one UTF-8 code point; a space is a character like any other.
Status MakeCharTokenizer(const std::vector<std::string>& chars,
                         const TextNormalizeOptions& normalize, std::unique_ptr<Tokenizer>* out);
// The sorted set of characters in the normalised `texts`: what shardify stores.
// InvalidArgument naming the text's index for invalid UTF-8.
Status BuildCharVocabulary(const std::vector<std::string>& texts,
                           const TextNormalizeOptions& normalize, std::vector<std::string>* chars);

// ---- SentencePiece -------------------------------------------------------

struct SentencePieceTrainOptions {
  std::string model_type = "bpe";  // "bpe" or "unigram"
  int vocab_size = 500;            // pieces SentencePiece makes (our vocab_size() adds the blank)
  int seed = 1;                    // fixes the trainer's sampling: same texts + seed = same model
  bool allow_unknown = false;      // see MakeSentencePieceTokenizer
};

// Trains a model on the normalised `texts` (in memory, one thread, so the
// result is deterministic) and returns its serialized bytes.
Status TrainSentencePiece(const std::vector<std::string>& texts,
                          const TextNormalizeOptions& normalize,
                          const SentencePieceTrainOptions& options, std::string* model_bytes);
// Loads a serialized model (a .model file's bytes). Ids are SentencePiece's
// plus one, so 0 stays the blank; SentencePiece's own end-of-sentence piece
// serves as end-of-document and must map to id 1, as TrainSentencePiece
// arranges. With allow_unknown false, text that maps to <unk> is an error.
Status MakeSentencePieceTokenizer(const std::string& model_bytes,
                                  const std::string& name_for_errors,
                                  const TextNormalizeOptions& normalize, bool allow_unknown,
                                  std::unique_ptr<Tokenizer>* out);

// ---- Byte-level BPE (bpe_tokenizer.h) -------------------------------------

struct HfTokenizerOptions {
  // HF's encode(text, add_special_tokens=...), with HF's default: the post-processor's tokens
  // (TemplateProcessing's single template, RobertaProcessing's or BertProcessing's cls and
  // sep) around every text. Datasets written before this option existed were encoded without.
  bool add_special_tokens = true;
  // The end-of-document token's text; empty: the file's (docs/tokenizers.md, "End of
  // document": the last token the post-processor appends, else the one special added token
  // named like an end of text), refused when ambiguous.
  std::string end_of_document_token;
};

// HF tokenizers' tokenizer.json (its bytes; `name` for errors). InvalidArgument naming the
// file and the JSON path for a component sluice does not support or an end of document it
// cannot pick; Corruption for a damaged file.
Status MakeHfTokenizer(const std::string& json_bytes, const std::string& name,
                       std::unique_ptr<Tokenizer>* out);
Status MakeHfTokenizer(const std::string& json_bytes, const std::string& name,
                       const HfTokenizerOptions& options, std::unique_ptr<Tokenizer>* out);
// tiktoken's rank file (lines of "base64-token rank") with the regex and the
// special tokens of the encoding `encoding` names: r50k_base, p50k_base,
// cl100k_base or o200k_base. End of document: <|endoftext|>.
Status MakeTiktokenTokenizer(const std::string& file_bytes, const std::string& name,
                             const std::string& encoding, std::unique_ptr<Tokenizer>* out);

}  // namespace sluice::features
