// CER/WER: edit distances against hand-counted cases, pooling over utterances, UTF-8; greedy CTC
// decoding through a real character tokenizer; the held-out split.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "trainer/error_rate.h"
#include "features/tokenizer.h"
#include "trainer/greedy_decode.h"
#include "trainer/held_out.h"
#include "assert_ok.h"

namespace sluice::train {
namespace {

size_t CharDistance(const std::string& a, const std::string& b) {
  return EditDistance(CodePoints(a), CodePoints(b));
}
size_t WordDistance(const std::string& a, const std::string& b) {
  return EditDistance(Words(a), Words(b));
}

TEST(EditDistance, CountsSubstitutionsInsertionsAndDeletions) {
  EXPECT_EQ(CharDistance("", ""), 0u);
  EXPECT_EQ(CharDistance("abc", ""), 3u);
  EXPECT_EQ(CharDistance("", "abc"), 3u);
  EXPECT_EQ(CharDistance("kitten", "sitting"), 3u);  // k->s, e->i, +g
  EXPECT_EQ(CharDistance("flaw", "lawn"), 2u);       // -f, +n
  EXPECT_EQ(CharDistance("abc", "abc"), 0u);
  EXPECT_EQ(CharDistance("abcdef", "azcdxf"), 2u);
}

TEST(EditDistance, IsSymmetric) {
  const std::vector<std::string> s = {"",        "a",         "ab",      "ba",
                                      "the cat", "a cat the", "sitting", "kitten"};
  for (const auto& a : s)
    for (const auto& b : s) EXPECT_EQ(CharDistance(a, b), CharDistance(b, a)) << a << " | " << b;
}

TEST(EditDistance, CountsCodePointsNotBytes) {
  EXPECT_EQ(CodePoints("naïve").size(), 5u);
  EXPECT_EQ(CharDistance("naïve", "naive"), 1u);  // one substitution, though ï is two bytes
  EXPECT_EQ(CharDistance("日本語", "日本"), 1u);
}

TEST(EditDistance, WordsSplitOnAnyWhitespace) {
  EXPECT_EQ(Words("  the  old\tman \n").size(), 3u);
  EXPECT_EQ(WordDistance("the old man", "the man"), 1u);
  EXPECT_EQ(WordDistance("the old man", "a old men"), 2u);
  EXPECT_EQ(WordDistance("", "one two"), 2u);
}

TEST(ErrorCounts, PoolsEditsBeforeDividing) {
  ErrorCounts e;
  e.Add("abcd", "abcd");  // 0 edits of 4
  e.Add("ab", "");        // 2 edits of 2
  EXPECT_EQ(e.char_edits, 2u);
  EXPECT_EQ(e.chars, 6u);
  EXPECT_DOUBLE_EQ(e.cer(), 2.0 / 6.0);  // not the mean of 0 and 1
  EXPECT_EQ(e.utterances, 2u);
}

TEST(ErrorCounts, WerOfTheClassicExample) {
  ErrorCounts e;
  e.Add("the cat sat on the mat", "the cat sit on mat");  // 1 substitution + 1 deletion
  EXPECT_DOUBLE_EQ(e.wer(), 2.0 / 6.0);
  EXPECT_EQ(e.chars, 22u);
}

TEST(ErrorCounts, EmptyIsZeroAndInsertionsCanExceedOne) {
  ErrorCounts e;
  EXPECT_EQ(e.cer(), 0.0);
  e.Add("a", "xyz");
  EXPECT_DOUBLE_EQ(e.cer(), 3.0);
}

TEST(GreedyDecode, ArgmaxCollapseAndDecode) {
  std::unique_ptr<features::Tokenizer> tok;
  ASSERT_OK(features::MakeCharTokenizer({" ", "a", "b"}, features::TextNormalizeOptions(), &tok));
  ASSERT_EQ(tok->vocab_size(), 5);  // blank, end-of-document, ' ', 'a', 'b'
  // Frames' argmax: a a blank a b b blank ' ' b -> "aab b"
  const std::vector<int> best = {3, 3, 0, 3, 4, 4, 0, 2, 4};
  std::vector<float> lp(best.size() * 5, -5.0f);
  for (size_t t = 0; t < best.size(); ++t) lp[t * 5 + best[t]] = -0.1f;
  std::vector<int32_t> ids;
  std::string text;
  ASSERT_OK(GreedyDecode(lp.data(), static_cast<int>(best.size()), 5, *tok, &ids, &text));
  EXPECT_EQ(text, "aab b");
  // Frames past `frames` are not read.
  ASSERT_OK(GreedyDecode(lp.data(), 2, 5, *tok, &ids, &text));
  EXPECT_EQ(text, "a");
}

TEST(HeldOut, IsAStableFunctionOfTheKeyNearTheFraction) {
  int held = 0;
  for (int i = 0; i < 10000; ++i) {
    const std::string key = "utt-" + std::to_string(i);
    const bool h = IsHeldOut(key, 0.1);
    EXPECT_EQ(h, IsHeldOut(key, 0.1));
    if (h) {
      ++held;
      EXPECT_TRUE(IsHeldOut(key, 0.2))
          << "a larger fraction keeps every row a smaller one held out";
    }
  }
  EXPECT_NEAR(held, 1000, 100);
  EXPECT_FALSE(IsHeldOut("utt-1", 0.0));
}

}  // namespace
}  // namespace sluice::train
