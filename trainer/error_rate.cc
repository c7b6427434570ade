#include "trainer/error_rate.h"

#include <algorithm>

#include "features/utf8.h"

namespace sluice::train {
namespace {

// One row of the dynamic programme at a time: row[j] = distance(ref[0, i), hyp[0, j)).
template <typename T>
size_t Levenshtein(const std::vector<T>& ref, const std::vector<T>& hyp) {
  std::vector<size_t> row(hyp.size() + 1);
  for (size_t j = 0; j <= hyp.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= ref.size(); ++i) {
    size_t diagonal = row[0];  // distance(ref[0, i-1), hyp[0, j-1))
    row[0] = i;
    for (size_t j = 1; j <= hyp.size(); ++j) {
      const size_t substitute = diagonal + (ref[i - 1] == hyp[j - 1] ? 0 : 1);
      diagonal = row[j];
      row[j] = std::min({substitute, row[j] + 1, row[j - 1] + 1});
    }
  }
  return row[hyp.size()];
}

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

}  // namespace

size_t EditDistance(const std::vector<char32_t>& ref, const std::vector<char32_t>& hyp) {
  return Levenshtein(ref, hyp);
}

size_t EditDistance(const std::vector<std::string_view>& ref,
                    const std::vector<std::string_view>& hyp) {
  return Levenshtein(ref, hyp);
}

std::vector<char32_t> CodePoints(std::string_view text) {
  std::vector<char32_t> out;
  size_t bad = 0;
  if (!features::ValidUtf8(text, &bad)) {
    for (unsigned char c : text) out.push_back(c);
    return out;
  }
  for (size_t pos = 0; pos < text.size();) out.push_back(features::NextCodePoint(text, &pos));
  return out;
}

std::vector<std::string_view> Words(std::string_view text) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && IsSpace(text[i])) ++i;
    const size_t start = i;
    while (i < text.size() && !IsSpace(text[i])) ++i;
    if (i > start) out.push_back(text.substr(start, i - start));
  }
  return out;
}

void ErrorCounts::Add(std::string_view reference, std::string_view hypothesis) {
  const auto ref_chars = CodePoints(reference), hyp_chars = CodePoints(hypothesis);
  char_edits += EditDistance(ref_chars, hyp_chars);
  chars += ref_chars.size();
  const auto ref_words = Words(reference), hyp_words = Words(hypothesis);
  word_edits += EditDistance(ref_words, hyp_words);
  words += ref_words.size();
  ++utterances;
}

}  // namespace sluice::train
