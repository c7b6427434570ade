#include "features/text_normalize.h"

#include "features/utf8.h"

namespace sluice::features {
namespace {

char32_t ToLower(char32_t c) {
  if (c >= U'A' && c <= U'Z') return c + 32;
  // Latin-1 capitals À..Þ except × (U+00D7).
  if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 32;
  // Latin Extended-A pairs capital/small alternate (Ā ā Ă ă ...), except around ı and ĸ/ŉ.
  if (c >= 0x100 && c <= 0x17F && c != 0x130 && c != 0x131 && c != 0x138 && c != 0x149 &&
      c != 0x17F) {
    const bool odd_block = (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E);
    if (odd_block ? (c % 2 == 1) : (c % 2 == 0)) return c + 1;
  }
  return c;
}

bool IsSpace(char32_t c) {
  return c == U' ' || c == U'\t' || c == U'\n' || c == U'\r' || c == 0xA0;
}

bool IsPunct(char32_t c) {
  if (c < 0x80)
    return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) ||
           (c >= 0x7B && c <= 0x7E);
  // General punctuation block (dashes, curly quotes, ellipsis), Latin-1 punctuation (¡ « » ¿).
  return (c >= 0x2010 && c <= 0x205E) || c == 0xA1 || c == 0xAB || c == 0xBB || c == 0xBF;
}

bool IsLetterOrDigit(char32_t c) {
  return (c >= U'a' && c <= U'z') || (c >= U'A' && c <= U'Z') || (c >= U'0' && c <= U'9') ||
         (c >= 0xC0 && c != 0xD7 && c != 0xF7 && !IsPunct(c) && !IsSpace(c));
}

}  // namespace

std::string NormalizeText(std::string_view text, const TextNormalizeOptions& o) {
  // Decode once into code points: the punctuation rule looks one character ahead and behind.
  std::u32string cps;
  cps.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) cps.push_back(NextCodePoint(text, &pos));

  std::string out;
  out.reserve(text.size());
  bool pending_space = false;
  for (size_t i = 0; i < cps.size(); ++i) {
    char32_t c = cps[i];
    if (o.strip_punctuation && IsPunct(c)) {
      // Apostrophes (straight or U+2019) and hyphens survive between two letters.
      const bool inner = (c == U'\'' || c == 0x2019 || c == U'-') && i > 0 && i + 1 < cps.size() &&
                         IsLetterOrDigit(cps[i - 1]) && IsLetterOrDigit(cps[i + 1]);
      if (!inner) {
        // "end.Start" must not glue two words together.
        if (o.collapse_whitespace) pending_space = true;
        continue;
      }
      if (c == 0x2019) c = U'\'';
    }
    if (o.collapse_whitespace && IsSpace(c)) {
      pending_space = true;
      continue;
    }
    if (pending_space && !out.empty()) out.push_back(' ');
    pending_space = false;
    AppendUtf8(o.lowercase ? ToLower(c) : c, &out);
  }
  return out;
}

}  // namespace sluice::features
