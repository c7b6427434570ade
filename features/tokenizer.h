// Tokenizers behind one interface: a character vocabulary and SentencePiece
// (BPE or unigram). The same object encodes offline in shardify and online in
// the loader, so both give the same ids.
//
// Id layout, the same for every tokenizer: 0 is the CTC blank (never produced
// by Encode), 1 is the end-of-document token, real tokens start at 2.
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
  // Text of ids (blank and end-of-document are skipped). InvalidArgument for an
  // id outside [0, vocab_size()).
  virtual Status Decode(const int32_t* ids, size_t n, std::string* text) const = 0;
  // Number of ids, blank and end-of-document included.
  virtual int32_t vocab_size() const = 0;
  virtual std::string_view type() const = 0;  // "char" or "sentencepiece"
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

}  // namespace sluice::features
