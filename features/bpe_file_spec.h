// The --tokenizer spellings of the byte-level BPE files, shared by shardify, sluice-bench and
// the tests: "hf:PATH/tokenizer.json" and "tiktoken:PATH[:ENCODING]" (ENCODING left out: the
// file's name must start with one, as tiktoken names them: cl100k_base.tiktoken).
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "features/tokenizer.h"

namespace sluice::features {

struct BpeFileSpec {
  std::string type;      // "hf" or "tiktoken" (Tokenizer::type())
  std::string path;      // the file
  std::string encoding;  // tiktoken only: r50k_base, p50k_base, cl100k_base, o200k_base
  HfTokenizerOptions hf;  // hf only: the post-processor switch and the end-of-document token
};

// Whether `spec` starts with "hf:" or "tiktoken:".
bool IsBpeFileSpec(const std::string& spec);
// InvalidArgument quoting `spec` with the fix (a missing path, an encoding to name).
Status ParseBpeFileSpec(const std::string& spec, BpeFileSpec* out);
// Reads spec.path (base/file.h) into *bytes and makes the tokenizer from them.
Status LoadBpeFile(const BpeFileSpec& spec, std::string* bytes, std::unique_ptr<Tokenizer>* out);

}  // namespace sluice::features
