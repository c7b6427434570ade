// The character tokenizer of the conversation tests: ids 2.. for "a".."z", " ", "<", ">", "|"
// (0 blank, 1 end of document), punctuation kept so that template markers like "<|" survive.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "assert_ok.h"
#include "features/text_normalize.h"
#include "features/tokenizer.h"

namespace sluice::loader::testing {

inline std::vector<std::string> TemplateVocabulary() {
  std::vector<std::string> chars;
  for (char c = 'a'; c <= 'z'; ++c) chars.emplace_back(1, c);
  for (const char* c : {" ", "<", ">", "|"}) chars.emplace_back(c);
  return chars;
}

inline features::TextNormalizeOptions TemplateNormalize() {
  features::TextNormalizeOptions keep;
  keep.strip_punctuation = false;
  return keep;
}

inline std::unique_ptr<features::Tokenizer> TemplateChars() {
  std::unique_ptr<features::Tokenizer> t;
  EXPECT_OK(features::MakeCharTokenizer(TemplateVocabulary(), TemplateNormalize(), &t));
  return t;
}

}  // namespace sluice::loader::testing
