// tiktoken's rank files (`cl100k_base.tiktoken`: one "base64-token rank" per line, the rank
// being both the merge priority and the id) and the encodings that give them a regex and
// special tokens, as tiktoken_ext/openai_public.py defines them.
#pragma once

#include <string>

#include "base/status.h"
#include "features/bpe_tokenizer.h"

namespace sluice::features {

// The encodings sluice knows by name.
inline constexpr const char* kTiktokenEncodingNames[] = {"r50k_base", "p50k_base", "cl100k_base",
                                                         "o200k_base"};
inline constexpr const char* kTiktokenEncodings = "r50k_base, p50k_base, cl100k_base, o200k_base";

// Reads the rank file's bytes into *spec with `encoding`'s pattern and special tokens.
// InvalidArgument for an unknown encoding; Corruption naming `name` and the line for a bad line
// (not "base64 rank", bad base64, a token or rank given twice).
Status ParseTiktokenFile(const std::string& bytes, const std::string& name,
                         const std::string& encoding, BpeTokenizerSpec* spec);

}  // namespace sluice::features
