// The character vocabulary: one id per code point of the normalised text.
#include <algorithm>
#include <cstdio>
#include <set>
#include <unordered_map>

#include "features/tokenizer.h"
#include "features/utf8.h"

namespace sluice::features {
namespace {

std::string Describe(char32_t c) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "U+%04X", static_cast<unsigned>(c));
  std::string shown;
  AppendUtf8(c, &shown);
  return "'" + shown + "' (" + buf + ")";
}

class CharTokenizer final : public Tokenizer {
 public:
  CharTokenizer(std::vector<std::string> chars, std::unordered_map<char32_t, int32_t> ids,
                const TextNormalizeOptions& normalize)
      : chars_(std::move(chars)), ids_(std::move(ids)) {
    normalize_ = normalize;
  }

  Status Encode(std::string_view text, std::vector<int32_t>* out) const override {
    const std::string norm = NormalizeText(text, normalize_);
    for (size_t pos = 0; pos < norm.size();) {
      const size_t at = pos;
      const char32_t c = NextCodePoint(norm, &pos);
      auto it = ids_.find(c);
      if (it == ids_.end()) {
        return Status::InvalidArgument("character " + Describe(c) + " at byte " +
                                       std::to_string(at) +
                                       " of the normalised text is not in the vocabulary");
      }
      out->push_back(it->second);
    }
    return Status::OK();
  }

  Status Decode(const int32_t* ids, size_t n, std::string* text) const override {
    text->clear();
    for (size_t i = 0; i < n; ++i) {
      if (ids[i] < 0 || ids[i] >= vocab_size()) {
        return Status::InvalidArgument("token id " + std::to_string(ids[i]) + " at position " +
                                       std::to_string(i) + " is outside the vocabulary of " +
                                       std::to_string(vocab_size()));
      }
      if (ids[i] >= kFirstTokenId) *text += chars_[ids[i] - kFirstTokenId];
    }
    return Status::OK();
  }

  int32_t vocab_size() const override {
    return kFirstTokenId + static_cast<int32_t>(chars_.size());
  }
  std::string_view type() const override { return "char"; }

 private:
  std::vector<std::string> chars_;
  std::unordered_map<char32_t, int32_t> ids_;
};

}  // namespace

Status MakeCharTokenizer(const std::vector<std::string>& chars,
                         const TextNormalizeOptions& normalize, std::unique_ptr<Tokenizer>* out) {
  std::unordered_map<char32_t, int32_t> ids;
  for (size_t i = 0; i < chars.size(); ++i) {
    size_t bad = 0, pos = 0;
    if (chars[i].empty() || !ValidUtf8(chars[i], &bad)) {
      return Status::Corruption("character vocabulary entry " + std::to_string(i) +
                                " is not a UTF-8 character");
    }
    const char32_t c = NextCodePoint(chars[i], &pos);
    if (pos != chars[i].size()) {
      return Status::Corruption("character vocabulary entry " + std::to_string(i) +
                                " holds more than one character");
    }
    if (!ids.emplace(c, kFirstTokenId + static_cast<int32_t>(i)).second) {
      return Status::Corruption("character vocabulary lists " + Describe(c) + " twice");
    }
  }
  *out = std::make_unique<CharTokenizer>(chars, std::move(ids), normalize);
  return Status::OK();
}

Status BuildCharVocabulary(const std::vector<std::string>& texts,
                           const TextNormalizeOptions& normalize, std::vector<std::string>* chars) {
  std::set<char32_t> seen;
  for (size_t i = 0; i < texts.size(); ++i) {
    size_t bad = 0;
    if (!ValidUtf8(texts[i], &bad)) {
      return Status::InvalidArgument("text " + std::to_string(i) + ": invalid UTF-8 at byte " +
                                     std::to_string(bad));
    }
    const std::string norm = NormalizeText(texts[i], normalize);
    for (size_t pos = 0; pos < norm.size();) seen.insert(NextCodePoint(norm, &pos));
  }
  chars->clear();
  for (char32_t c : seen) {
    std::string s;
    AppendUtf8(c, &s);
    chars->push_back(std::move(s));
  }
  return Status::OK();
}

void CtcCollapse(const int32_t* frame_ids, size_t n, std::vector<int32_t>* out) {
  out->clear();
  int32_t prev = -1;
  for (size_t i = 0; i < n; ++i) {
    if (frame_ids[i] != prev && frame_ids[i] != kBlankId) out->push_back(frame_ids[i]);
    prev = frame_ids[i];
  }
}

}  // namespace sluice::features
