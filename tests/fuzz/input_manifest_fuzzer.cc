// libFuzzer target for `shardify audio`'s JSONL input manifest (tools/shardify/manifest_line.h):
// every line of the input goes through ParseManifestLine as shardify runs it, without and with a
// character tokenizer. A line is accepted or rejected with a reason, never a crash, and an
// accepted line satisfies what the rest of shardify relies on (a non-empty path and key within
// kMaxKeySize, finite non-negative offset, token ids inside the vocabulary).
// Seeds: corpus/input_manifest (tests/fuzz/make_seeds.cc).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "features/tokenizer.h"
#include "manifest_line.h"
#include "shards/format.h"

namespace {

const sluice::features::Tokenizer* CharTokenizer() {
  static const std::unique_ptr<sluice::features::Tokenizer> t = [] {
    std::vector<std::string> chars = {" ", "'"};
    for (char c = 'a'; c <= 'z'; ++c) chars.emplace_back(1, c);
    chars.emplace_back("\xc3\xa9");  // é: one multi-byte character
    std::unique_ptr<sluice::features::Tokenizer> out;
    if (!sluice::features::MakeCharTokenizer(chars, {}, &out).ok()) std::abort();
    return out;
  }();
  return t.get();
}

void Check(bool ok, const sluice::shardify::ManifestLine& l, const std::vector<int32_t>& ids,
           const sluice::features::Tokenizer* tok, const std::string& reason) {
  if (!ok) {
    if (reason.empty()) std::abort();  // rejects.jsonl would hold no reason
    return;
  }
  if (l.audio_filepath.empty() || l.key.empty() || l.key.size() > sluice::shards::kMaxKeySize)
    std::abort();
  if (!std::isfinite(l.decode.offset_seconds) || l.decode.offset_seconds < 0) std::abort();
  if (tok) {
    for (int32_t id : ids)
      if (id < sluice::features::kFirstTokenId || id >= tok->vocab_size()) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice::shardify;
  // Lines as LineSource splits them: "\n", with a "\r" before it stripped.
  std::string_view in(reinterpret_cast<const char*>(data), size);
  while (!in.empty()) {
    const size_t nl = in.find('\n');
    std::string line(in.substr(0, nl));
    in.remove_prefix(nl == std::string_view::npos ? in.size() : nl + 1);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const sluice::features::Tokenizer* tokenizers[] = {nullptr, CharTokenizer()};
    for (const sluice::features::Tokenizer* tok : tokenizers) {
      ManifestLine parsed;
      std::vector<int32_t> ids;
      std::string reason;
      const bool ok = ParseManifestLine(line, tok, &parsed, &ids, &reason);
      Check(ok, parsed, ids, tok, reason);
    }
  }
  return 0;
}
