// libFuzzer target for the byte-level BPE files (features/tokenizer.h MakeHfTokenizer,
// MakeTiktokenTokenizer): a tokenizer.json or a tiktoken rank file, as shardify --tokenizer
// hf:/tiktoken: or a dataset's own copy gives them, must load or give a Status, never a crash;
// one that loads must encode text to ids inside [0, vocab_size) that Decode accepts.
// Input: one byte choosing the kind (even: tokenizer.json, odd: tiktoken), then the file.
// Seeds: corpus/bpe_file (a small GPT-2-shaped tokenizer.json and rank file, written by hand).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "features/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice::features;
  if (size == 0) return 0;
  const std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::unique_ptr<Tokenizer> t;
  const bool hf = data[0] % 2 == 0;
  if (!(hf ? MakeHfTokenizer(bytes, "fuzz/tokenizer.json", &t)
           : MakeTiktokenTokenizer(bytes, "fuzz.tiktoken", "cl100k_base", &t))
           .ok())
    return 0;
  const int32_t vocab = t->vocab_size();
  if (t->end_of_document_id() < 0 || t->end_of_document_id() >= vocab) std::abort();
  std::vector<int32_t> ids;
  std::string decoded;
  for (const char* text :
       {"hello world", "", "  \t\n\n x = 42;  ", "\xc3\xa9t\xc3\xa9 \xe2\x9c\x93",
        "<|endoftext|>a<|endoftext|>", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}) {
    ids.clear();
    if (!t->Encode(text, &ids).ok()) continue;
    for (int32_t id : ids)
      if (id < 0 || id >= vocab) std::abort();
    if (!t->Decode(ids.data(), ids.size(), &decoded).ok()) std::abort();
  }
  return 0;
}
