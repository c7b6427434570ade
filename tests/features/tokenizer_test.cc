#include <gtest/gtest.h>

#include "assert_ok.h"
#include "features/text_normalize.h"
#include "features/tokenizer.h"
#include "features/utf8.h"
#include "fuzz_regression.h"

namespace sluice::features {
namespace {

std::vector<std::string> Corpus() {
  std::vector<std::string> t;
  const char* subjects[] = {"The old man", "A young girl", "My neighbour", "Every student",
                            "Her brother"};
  const char* verbs[] = {"painted", "carried", "found", "repaired", "opened", "described"};
  const char* objects[] = {"a red bicycle.", "the wooden boxes!", "seven green apples",
                           "the broken window?"};
  for (const char* s : subjects)
    for (const char* v : verbs)
      for (const char* o : objects) t.push_back(std::string(s) + " " + v + " " + o);
  return t;
}

TEST(TextNormalize, LowercasesStripsPunctuationAndCollapsesSpaces) {
  TextNormalizeOptions o;
  EXPECT_EQ(NormalizeText("  Hello,   World!  It's a well-known FACT.  ", o),
            "hello world it's a well-known fact");
  EXPECT_EQ(NormalizeText("end.Start", o), "end start");
  EXPECT_EQ(NormalizeText("Ça VA — «bien»", o), "ça va bien");
  EXPECT_EQ(NormalizeText("don\xE2\x80\x99t", o), "don't");  // U+2019 becomes an ASCII apostrophe
  o.lowercase = o.strip_punctuation = o.collapse_whitespace = false;
  EXPECT_EQ(NormalizeText(" A,  b ", o), " A,  b ");
}

TEST(Utf8, DetectsInvalidSequences) {
  size_t bad = 0;
  EXPECT_TRUE(ValidUtf8("plain ascii é ✓ 𝄞", &bad));
  EXPECT_FALSE(ValidUtf8("bad \xff byte", &bad));
  EXPECT_EQ(bad, 4u);
  EXPECT_FALSE(ValidUtf8("\xC0\x80", &bad));          // overlong NUL
  EXPECT_FALSE(ValidUtf8("\xED\xA0\x80", &bad));      // surrogate
  EXPECT_FALSE(ValidUtf8("\xF4\x90\x80\x80", &bad));  // above U+10FFFF
  EXPECT_FALSE(ValidUtf8("\xE2\x82", &bad));          // truncated
}

TEST(CharTokenizer, RoundTripsTheNormalisedText) {
  std::vector<std::string> chars;
  ASSERT_OK(BuildCharVocabulary(Corpus(), {}, &chars));
  EXPECT_EQ(chars.front(), " ");  // sorted by code point
  std::unique_ptr<Tokenizer> tok;
  ASSERT_OK(MakeCharTokenizer(chars, {}, &tok));
  EXPECT_EQ(tok->vocab_size(), kFirstTokenId + static_cast<int32_t>(chars.size()));
  for (const auto& text : Corpus()) {
    std::vector<int32_t> ids;
    ASSERT_OK(tok->Encode(text, &ids));
    for (int32_t id : ids) EXPECT_GE(id, kFirstTokenId);
    std::string back;
    ASSERT_OK(tok->Decode(ids.data(), ids.size(), &back));
    EXPECT_EQ(back, NormalizeText(text, {}));
  }
}

TEST(CharTokenizer, MissingCharacterIsAnErrorNamingIt) {
  std::unique_ptr<Tokenizer> tok;
  ASSERT_OK(MakeCharTokenizer({" ", "a", "b"}, {}, &tok));
  std::vector<int32_t> ids;
  Status s = tok->Encode("ab é", &ids);
  ASSERT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(s.message().find("U+00E9"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("byte 3"), std::string::npos) << s.ToString();
}

TEST(CharTokenizer, IdOutsideTheVocabularyIsAnError) {
  std::unique_ptr<Tokenizer> tok;
  ASSERT_OK(MakeCharTokenizer({"a"}, {}, &tok));
  std::string text;
  const int32_t ids[] = {2, 3};
  EXPECT_TRUE(tok->Decode(ids, 2, &text).IsInvalidArgument());
}

TEST(CharTokenizer, DuplicateVocabularyEntryIsCorruption) {
  std::unique_ptr<Tokenizer> tok;
  EXPECT_TRUE(MakeCharTokenizer({"a", "a"}, {}, &tok).IsCorruption());
  EXPECT_TRUE(MakeCharTokenizer({"ab"}, {}, &tok).IsCorruption());
}

TEST(Ctc, CollapseMergesRepeatsAndDropsBlanks) {
  const int32_t frames[] = {0, 5, 5, 0, 5, 7, 7, 7, 0, 0, 3};
  std::vector<int32_t> out;
  CtcCollapse(frames, 11, &out);
  EXPECT_EQ(out, (std::vector<int32_t>{5, 5, 7, 3}));
}

TEST(SentencePiece, TrainingIsDeterministicAndRoundTrips) {
  SentencePieceTrainOptions o;
  o.vocab_size = 60;
  std::string m1, m2;
  Status s = TrainSentencePiece(Corpus(), {}, o, &m1);
  ASSERT_OK(s);
  ASSERT_OK(TrainSentencePiece(Corpus(), {}, o, &m2));
  EXPECT_EQ(m1, m2);
  std::unique_ptr<Tokenizer> tok;
  ASSERT_OK(MakeSentencePieceTokenizer(m1, "test.model", {}, false, &tok));
  EXPECT_EQ(tok->type(), "sentencepiece");
  for (const auto& text : Corpus()) {
    std::vector<int32_t> ids;
    ASSERT_OK(tok->Encode(text, &ids));
    for (int32_t id : ids) {
      EXPECT_GE(id, kFirstTokenId);
      EXPECT_LT(id, tok->vocab_size());
    }
    std::string back;
    ASSERT_OK(tok->Decode(ids.data(), ids.size(), &back));
    EXPECT_EQ(back, NormalizeText(text, {}));
  }
}

TEST(SentencePiece, UnigramTrainsToo) {
  SentencePieceTrainOptions o;
  o.model_type = "unigram";
  o.vocab_size = 50;
  std::string m;
  Status s = TrainSentencePiece(Corpus(), {}, o, &m);
  ASSERT_OK(s);
  std::unique_ptr<Tokenizer> tok;
  ASSERT_OK(MakeSentencePieceTokenizer(m, "u.model", {}, false, &tok));
  std::vector<int32_t> ids;
  EXPECT_OK(tok->Encode("the old man found a red bicycle", &ids));
  EXPECT_FALSE(ids.empty());
}

TEST(SentencePiece, UnknownCharacterIsAnErrorUnlessAllowed) {
  SentencePieceTrainOptions o;
  o.vocab_size = 60;
  std::string m;
  ASSERT_OK(TrainSentencePiece(Corpus(), {}, o, &m));
  std::unique_ptr<Tokenizer> strict, lax;
  ASSERT_OK(MakeSentencePieceTokenizer(m, "m.model", {}, false, &strict));
  ASSERT_OK(MakeSentencePieceTokenizer(m, "m.model", {}, true, &lax));
  std::vector<int32_t> ids;
  Status s = strict->Encode("the zebra", &ids);  // 'z' never occurs in the corpus
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(s.message().find("<unk>"), std::string::npos) << s.ToString();
  ids.clear();
  EXPECT_OK(lax->Encode("the zebra", &ids));
}

TEST(SentencePiece, GarbageModelIsCorruption) {
  std::unique_ptr<Tokenizer> tok;
  Status s = MakeSentencePieceTokenizer("definitely not a model", "bad.model", {}, false, &tok);
  EXPECT_TRUE(s.IsCorruption());
  EXPECT_NE(s.message().find("bad.model"), std::string::npos);
}

// Found by sentencepiece_fuzzer: a model (our 40-piece BPE seed, one length byte changed) with a
// zero-length piece. libsentencepiece's trie builder throws on it, and the exception escaped
// MakeSentencePieceTokenizer: shardify --tokenizer spm:PATH or a dataset with a damaged
// tokenizer.model terminated the process.
TEST(SentencePiece, ModelWithAnEmptyPieceIsCorruption) {
  const std::string model =
      sluice::testing::FuzzRegression("sentencepiece", "zero-length-piece.model");
  ASSERT_FALSE(model.empty());
  std::unique_ptr<Tokenizer> tok;
  Status s = MakeSentencePieceTokenizer(model, "damaged.model", {}, false, &tok);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_EQ(s.message().rfind("damaged.model: not a SentencePiece model", 0), 0u) << s.message();
  EXPECT_EQ(tok, nullptr);
}

}  // namespace
}  // namespace sluice::features
