// libFuzzer target for a dataset's tokenizer description (manifest.json "tokenizer", read by
// loader/dataset_tokenizer.h LoadDatasetTokenizer): the character vocabulary JSON and its
// normalisation options. A description that loads must encode and decode text: ids inside
// [kFirstTokenId, vocab_size), Decode accepting every id below vocab_size and refusing others.
// ("sentencepiece" descriptions name a model file: sentencepiece_fuzzer.cc covers the model.)
// Seeds: corpus/tokenizer (tests/fuzz/make_seeds.cc, descriptions as shardify writes them).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "features/tokenizer.h"
#include "features/utf8.h"
#include "loader/dataset_tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice;
  // The description, then optionally a NUL and text to encode with it.
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t nul = in.find('\0');
  const nlohmann::json d = nlohmann::json::parse(in.substr(0, nul), nullptr, false);
  if (d.is_discarded()) return 0;
  std::unique_ptr<features::Tokenizer> t;
  if (!loader::LoadDatasetTokenizer(d, "/nonexistent/fuzz-dataset", &t).ok()) return 0;
  const int32_t vocab = t->vocab_size();
  if (vocab < features::kFirstTokenId) std::abort();
  std::vector<std::string> texts = {"hello world", "", "  A, b.  C!  "};
  if (nul != std::string_view::npos) texts.emplace_back(in.substr(nul + 1));
  if (d.contains("vocab") && d["vocab"].is_array()) {
    std::string all;
    for (const auto& c : d["vocab"]) all += c.get<std::string>();
    texts.push_back(all);
  }
  std::vector<int32_t> ids;
  std::string decoded;
  for (const std::string& text : texts) {
    size_t bad;
    if (!features::ValidUtf8(text, &bad)) continue;  // Encode's precondition
    ids.clear();
    if (!t->Encode(text, &ids).ok()) continue;
    for (int32_t id : ids)
      if (id < features::kFirstTokenId || id >= vocab) std::abort();
    if (!t->Decode(ids.data(), ids.size(), &decoded).ok()) std::abort();
  }
  std::vector<int32_t> every;
  for (int32_t id = 0; id < vocab && id < 4096; ++id) every.push_back(id);
  if (!t->Decode(every.data(), every.size(), &decoded).ok()) std::abort();
  const int32_t outside[] = {-1, vocab};
  for (int32_t id : outside)
    if (t->Decode(&id, 1, &decoded).ok()) std::abort();
  return 0;
}
