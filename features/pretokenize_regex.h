// A pre-tokenizer regex (the Split patterns of tokenizer.json, tiktoken's patterns), compiled
// once with PCRE2 (UTF + UCP, JIT when the CPU has it) and matched from any thread.
//
// The patterns were written for other engines: HF tokenizers matches with Oniguruma (Ruby
// syntax: `$` and `^` at line ends), tiktoken with Rust's fancy-regex (`$` only at the end).
// Both read `\s` as Unicode's White_Space, which PCRE2's UCP `\s` is not quite (it also takes
// U+180E), so `\s` and `\S` are rewritten to the White_Space list before compiling.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"

namespace sluice::features {

enum class RegexDialect {
  kOniguruma,   // HF tokenizer.json: `^` and `$` match at line boundaries
  kFancyRegex,  // tiktoken: `$` matches only at the end of the subject
};

class PretokenizeRegex {
 public:
  ~PretokenizeRegex();
  // InvalidArgument naming `where` (e.g. "tokenizer.json: pre_tokenizer.pattern.Regex") and
  // PCRE2's message with the offset for a pattern PCRE2 cannot compile.
  static Status Compile(std::string_view pattern, RegexDialect dialect, const std::string& where,
                        std::unique_ptr<PretokenizeRegex>* out);
  // A literal string (Split's {"String": ...}) as a pattern.
  static Status CompileLiteral(std::string_view literal, const std::string& where,
                               std::unique_ptr<PretokenizeRegex>* out);

  // Calls on_match(begin, end) for each non-empty match in `text` (valid UTF-8), left to right,
  // each search starting where the previous match ended, as the reference engines' find_iter.
  // Thread-safe. InvalidArgument when PCRE2 gives up (match limit), naming the offset.
  template <class F>
  Status ForEachMatch(std::string_view text, F&& on_match) const {
    size_t pos = 0;
    while (pos < text.size()) {
      size_t b = 0, e = 0;
      const int found = Find(text, pos, &b, &e);
      if (found < 0) return MatchError(text, pos, found);
      if (found == 0) break;
      if (e == b) {  // an empty match: step over one character, as find_iter does
        pos = NextCharBoundary(text, b);
        continue;
      }
      on_match(b, e);
      pos = e;
    }
    return Status::OK();
  }

  const std::string& pattern() const { return pattern_; }

 private:
  PretokenizeRegex() = default;
  // 1 and [*b, *e) for a match at or after `start`, 0 for none, <0 a PCRE2 error code.
  int Find(std::string_view text, size_t start, size_t* b, size_t* e) const;
  Status MatchError(std::string_view text, size_t pos, int code) const;
  static size_t NextCharBoundary(std::string_view text, size_t i);

  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string pattern_;
  std::string where_;
};

// `pattern` with `\s`/`\S` spelled as Unicode White_Space classes (header comment). Exposed for
// its test.
std::string RewriteWhitespaceClasses(std::string_view pattern);

}  // namespace sluice::features
