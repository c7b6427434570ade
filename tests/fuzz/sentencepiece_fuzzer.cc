// libFuzzer target for SentencePiece model loading (features/tokenizer.h
// MakeSentencePieceTokenizer): the bytes of a tokenizer.model (shardify --tokenizer spm:PATH, or
// a dataset's own) must load or give a Status, never a crash; a model that loads must encode
// and decode text with ids inside [kFirstTokenId, vocab_size). libsentencepiece itself is
// Debian's, not instrumented: coverage counts sluice's side only, crashes inside it still show.
// Seeds: corpus/sentencepiece (tests/fuzz/make_seeds.cc: small BPE and unigram models).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "features/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice::features;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  for (bool allow_unknown : {false, true}) {
    std::unique_ptr<Tokenizer> t;
    if (!MakeSentencePieceTokenizer(bytes, "fuzz.model", {}, allow_unknown, &t).ok()) continue;
    const int32_t vocab = t->vocab_size();
    std::vector<int32_t> ids;
    std::string decoded;
    for (const char* text : {"hello world", "", "the quick brown fox", "\xc3\xa9t\xc3\xa9 42"}) {
      ids.clear();
      if (!t->Encode(text, &ids).ok()) continue;
      for (int32_t id : ids)
        if (id < kFirstTokenId || id >= vocab) std::abort();
      if (!t->Decode(ids.data(), ids.size(), &decoded).ok()) std::abort();
    }
    std::vector<int32_t> every;
    for (int32_t id = 0; id < vocab && id < 4096; ++id) every.push_back(id);
    if (!t->Decode(every.data(), every.size(), &decoded).ok()) std::abort();
  }
  return 0;
}
