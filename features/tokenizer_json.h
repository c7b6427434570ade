// HF tokenizers' tokenizer.json, read into a BpeTokenizerSpec. What is supported, the rest
// being refused with the file and the JSON path (docs/tokenizers.md):
//   model        BPE: vocab, merges ("a b" strings or [a, b] pairs), byte_fallback,
//                ignore_merges, unk_token, fuse_unk (no dropout, subword prefix or suffix)
//   normalizer   null, NFC, NFKC, Sequence of those
//   pre_tokenizer ByteLevel (add_prefix_space, use_regex), Split (Regex or String pattern,
//                any behavior, invert), Sequence of those with ByteLevel last
//   decoder      ByteLevel
//   post_processor null, ByteLevel, TemplateProcessing (its single template),
//                RobertaProcessing, BertProcessing, Sequence of those: applied with
//                HfTokenizerOptions::add_special_tokens (HF's default, true)
//   added_tokens without lstrip, rstrip or single_word
#pragma once

#include <string>

#include "base/status.h"
#include "features/bpe_tokenizer.h"

namespace sluice::features {

// Names of an end of text: a file's one special added token among these ends documents
// (unless its post-processor closes each text with a token, or one is named explicitly);
// two of them are ambiguous and refused. The end of a chat turn serves only where none is.
inline constexpr const char* kEndOfTextTokens[] = {"<|endoftext|>", "<|end_of_text|>", "</s>",
                                                   "<eos>", "<EOT>"};
inline constexpr const char* kEndOfTurnToken = "<|im_end|>";

Status ParseTokenizerJson(const std::string& bytes, const std::string& name,
                          const HfTokenizerOptions& options, BpeTokenizerSpec* spec);

}  // namespace sluice::features
