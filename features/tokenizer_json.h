// HF tokenizers' tokenizer.json, read into a BpeTokenizerSpec. What is supported, the rest
// being refused with the file and the JSON path (docs/tokenizers.md):
//   model        BPE: vocab, merges ("a b" strings or [a, b] pairs), byte_fallback,
//                ignore_merges, unk_token, fuse_unk (no dropout, subword prefix or suffix)
//   normalizer   null, NFC, NFKC, Sequence of those
//   pre_tokenizer ByteLevel (add_prefix_space, use_regex), Split (Regex or String pattern,
//                any behavior, invert), Sequence of those with ByteLevel last
//   decoder      ByteLevel
//   post_processor null, ByteLevel, TemplateProcessing, Sequence: checked, not applied (the
//                ids are encode(text, add_special_tokens=False); shardify and the loader add
//                the end-of-document id themselves)
//   added_tokens without lstrip, rstrip or single_word
#pragma once

#include <string>

#include "base/status.h"
#include "features/bpe_tokenizer.h"

namespace sluice::features {

// The end-of-document token is the first of these that the file's added tokens hold.
inline constexpr const char* kEndOfTextTokens[] = {"<|endoftext|>", "<|end_of_text|>", "</s>",
                                                   "<|im_end|>",    "<eos>",           "<EOT>"};

Status ParseTokenizerJson(const std::string& bytes, const std::string& name,
                          BpeTokenizerSpec* spec);

}  // namespace sluice::features
