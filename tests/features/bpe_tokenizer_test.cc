// Byte-level BPE (features/bpe_tokenizer.h): tokenizer.json and tiktoken files written here,
// known answers, a plain reference of the merge rule, and the refusals. The ids of real producers
// (HF tokenizers, tiktoken) are compared in tests/features/bpe_equality.py.
#include <gtest/gtest.h>

#include <random>
#include <thread>

#include <nlohmann/json.hpp>

#include "assert_ok.h"
#include "features/bpe_tokenizer.h"
#include "features/byte_level.h"
#include "features/pretokenize_regex.h"
#include "features/tiktoken_file.h"
#include "features/tokenizer.h"
#include "features/tokenizer_json.h"
#include "features/utf8.h"

namespace sluice::features {
namespace {

using nlohmann::json;

std::string Alphabet(const std::string& raw) {
  std::string s;
  for (unsigned char c : raw) AppendUtf8(ByteLevelChar(c), &s);
  return s;
}

// A GPT-2-shaped tokenizer.json: the 256 byte tokens, then one token per merge.
json Gpt2Like(const std::vector<std::pair<std::string, std::string>>& merges) {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[Alphabet(std::string(1, static_cast<char>(b)))] = b;
  json m = json::array();
  for (const auto& [a, b] : merges) {
    vocab[Alphabet(a + b)] = static_cast<int>(vocab.size());
    m.push_back(Alphabet(a) + " " + Alphabet(b));
  }
  const int eot = static_cast<int>(vocab.size());
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens",
           {{{"id", eot},
             {"content", "<|endoftext|>"},
             {"single_word", false},
             {"lstrip", false},
             {"rstrip", false},
             {"normalized", false},
             {"special", true}}}},
          {"normalizer", nullptr},
          {"pre_tokenizer",
           {{"type", "ByteLevel"},
            {"add_prefix_space", false},
            {"trim_offsets", true},
            {"use_regex", true}}},
          {"post_processor", {{"type", "ByteLevel"}, {"trim_offsets", false}}},
          {"decoder", {{"type", "ByteLevel"}}},
          {"model",
           {{"type", "BPE"},
            {"dropout", nullptr},
            {"unk_token", nullptr},
            {"continuing_subword_prefix", nullptr},
            {"end_of_word_suffix", nullptr},
            {"fuse_unk", false},
            {"byte_fallback", false},
            {"ignore_merges", false},
            {"vocab", vocab},
            {"merges", m}}}};
}

const std::vector<std::pair<std::string, std::string>> kMerges = {
    {"l", "l"}, {"h", "e"},   {"he", "ll"}, {"hell", "o"}, {" ", "w"},
    {"o", "r"}, {" w", "or"}, {"l", "d"},   {" wor", "ld"}};

std::unique_ptr<Tokenizer> MakeHf(const json& j) {
  std::unique_ptr<Tokenizer> t;
  Status s = MakeHfTokenizer(j.dump(), "tokenizer.json", &t);
  EXPECT_OK(s);
  return t;
}

std::vector<int32_t> Encode(const Tokenizer& t, std::string_view text) {
  std::vector<int32_t> ids;
  EXPECT_OK(t.Encode(text, &ids)) << text;
  return ids;
}

std::string Decode(const Tokenizer& t, const std::vector<int32_t>& ids) {
  std::string text;
  EXPECT_OK(t.Decode(ids.data(), ids.size(), &text));
  return text;
}

TEST(HfTokenizer, MergesLowestRankFirstAndKeepsSpecialTokensWhole) {
  auto t = MakeHf(Gpt2Like(kMerges));
  ASSERT_TRUE(t);
  // Ids: bytes 0-255, then 256 + merge rank; <|endoftext|> after them.
  EXPECT_EQ(Encode(*t, "hello world"), (std::vector<int32_t>{259, 264}));
  EXPECT_EQ(Encode(*t, "hello<|endoftext|>hello"), (std::vector<int32_t>{259, 265, 259}));
  EXPECT_EQ(Encode(*t, "held"), (std::vector<int32_t>{257, 263}));  // "he" + "ld"
  EXPECT_EQ(t->end_of_document_id(), 265);
  EXPECT_EQ(t->blank_id(), -1);
  EXPECT_TRUE(t->ids_are_the_files());
  EXPECT_EQ(t->vocab_size(), 266);
  EXPECT_EQ(t->type(), "hf");
  const std::string text = "hello <|endoftext|> world\n\n  ünïcödé ✓ 𝄞 \t";
  EXPECT_EQ(Decode(*t, Encode(*t, text)), text);
}

TEST(HfTokenizer, RefusesInvalidUtf8NamingTheByte) {
  auto t = MakeHf(Gpt2Like(kMerges));
  std::vector<int32_t> ids;
  Status s = t->Encode("abc\xff", &ids);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(s.message().find("invalid UTF-8 at byte 3"), std::string::npos) << s.ToString();
}

TEST(HfTokenizer, DecodeRefusesIdsTheFileDoesNotAssign) {
  auto t = MakeHf(Gpt2Like(kMerges));
  std::string text;
  const int32_t bad[] = {266};
  EXPECT_EQ(t->Decode(bad, 1, &text).code(), Status::Code::kInvalidArgument);
}

TEST(HfTokenizer, AcceptsBothMergeSpellingsAndIgnoreMerges) {
  json j = Gpt2Like(kMerges);
  for (auto& m : j["model"]["merges"]) {
    const std::string s = m.get<std::string>();
    m = json::array({s.substr(0, s.find(' ')), s.substr(s.find(' ') + 1)});
  }
  auto t = MakeHf(j);
  EXPECT_EQ(Encode(*t, "hello world"), (std::vector<int32_t>{259, 264}));
  // With ignore_merges a pre-token that is a token is taken whole, even where the merges would
  // not reach it: "wd" is in the vocab but no merge makes it.
  j["model"]["vocab"]["wd"] = 266;
  j["added_tokens"][0]["id"] = 267;
  auto without = MakeHf(j);
  EXPECT_EQ(Encode(*without, "wd"), (std::vector<int32_t>{'w', 'd'}));
  j["model"]["ignore_merges"] = true;
  auto with = MakeHf(j);
  EXPECT_EQ(Encode(*with, "wd"), (std::vector<int32_t>{266}));
}

TEST(HfTokenizer, ByteFallbackAndUnknownTokens) {
  json j = Gpt2Like({});
  j["model"]["vocab"].erase(Alphabet("\xc3"));  // the first byte of "é" has no token now
  j["model"]["vocab"]["<0xC3>"] = 195;
  j["model"]["vocab"]["<0x83>"] = 256;
  j["added_tokens"][0]["id"] = 257;
  j["model"]["byte_fallback"] = true;
  auto t = MakeHf(j);
  // HF falls back on the bytes of the missing symbol, which is the alphabet's character for
  // 0xC3 ("Ã", C3 83), not the byte itself: HF tokenizers 0.23 gives [256, 257, 169] for the
  // same file with these two ids.
  EXPECT_EQ(Encode(*t, "\xc3\xa9"), (std::vector<int32_t>{195, 256, 0xa9}));
  // Without fallback and without <unk> the byte cannot be encoded: an error, not a dropped byte.
  j["model"]["byte_fallback"] = false;
  auto strict = MakeHf(j);
  std::vector<int32_t> ids;
  Status s = strict->Encode("\xc3\xa9", &ids);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(s.message().find("byte 0xC3"), std::string::npos) << s.ToString();
}

TEST(HfTokenizer, SplitBehaviours) {
  // Split on "-" with each behaviour, then ByteLevel without its regex: the pieces show in
  // where merges may apply. Merge "a-" exists, so "a-" is one token only when "a" and "-"
  // share a piece.
  auto make = [](const char* behavior, bool invert) {
    json j = Gpt2Like({{"a", "-"}, {"-", "b"}});
    j["pre_tokenizer"] = {
        {"type", "Sequence"},
        {"pretokenizers",
         {{{"type", "Split"},
           {"pattern", {{"String", "-"}}},
           {"behavior", behavior},
           {"invert", invert}},
          {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}};
    return MakeHf(j);
  };
  const int32_t a_dash = 256, dash_b = 257, a = 'a', b = 'b', dash = '-';
  EXPECT_EQ(Encode(*make("Isolated", false), "a-b"), (std::vector<int32_t>{a, dash, b}));
  EXPECT_EQ(Encode(*make("Removed", false), "a-b"), (std::vector<int32_t>{a, b}));
  EXPECT_EQ(Encode(*make("MergedWithPrevious", false), "a-b"), (std::vector<int32_t>{a_dash, b}));
  EXPECT_EQ(Encode(*make("MergedWithNext", false), "a-b"), (std::vector<int32_t>{a, dash_b}));
  EXPECT_EQ(Encode(*make("Contiguous", false), "a--b"), (std::vector<int32_t>{a, dash, dash, b}));
}

TEST(HfTokenizer, RefusesUnsupportedComponentsNamingThePath) {
  auto refusal = [](const json& j) {
    std::unique_ptr<Tokenizer> t;
    Status s = MakeHfTokenizer(j.dump(), "dir/tokenizer.json", &t);
    EXPECT_FALSE(s.ok());
    return s.message();
  };
  json j = Gpt2Like(kMerges);
  j["normalizer"] = {{"type", "Sequence"},
                     {"normalizers", {{{"type", "NFC"}}, {{"type", "Lowercase"}}}}};
  EXPECT_EQ(refusal(j),
            "dir/tokenizer.json: normalizer.normalizers[1].type \"Lowercase\" is not supported "
            "(supported: NFC, NFKC, Sequence)");
  j = Gpt2Like(kMerges);
  j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "▁"}};
  EXPECT_EQ(refusal(j),
            "dir/tokenizer.json: pre_tokenizer.type \"Metaspace\" is not supported "
            "(supported: ByteLevel, Split, Sequence)");
  j = Gpt2Like(kMerges);
  j["model"]["dropout"] = 0.1;
  EXPECT_NE(refusal(j).find("model.dropout"), std::string::npos);
  j = Gpt2Like(kMerges);
  j["model"]["type"] = "WordPiece";
  EXPECT_NE(refusal(j).find("model.type \"WordPiece\" is not supported"), std::string::npos);
  j = Gpt2Like(kMerges);
  j["model"]["merges"].push_back("zz q");
  EXPECT_NE(refusal(j).find("model.merges[9]: \"zz\" is not in the vocab"), std::string::npos);
  j = Gpt2Like(kMerges);
  j["added_tokens"][0]["lstrip"] = true;
  EXPECT_NE(refusal(j).find("added_tokens[0].lstrip"), std::string::npos);
  j = Gpt2Like(kMerges);
  j["decoder"] = {{"type", "Metaspace"}};
  EXPECT_NE(refusal(j).find("decoder.type \"Metaspace\""), std::string::npos);
  j = Gpt2Like(kMerges);
  j["added_tokens"][0]["content"] = "<|my_end|>";
  EXPECT_NE(refusal(j).find("no end-of-document token"), std::string::npos) << refusal(j);
  j = Gpt2Like(kMerges);
  j["pre_tokenizer"] = {
      {"type", "Sequence"},
      {"pretokenizers",
       {{{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}},
        {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}};
  EXPECT_NE(refusal(j).find("does not compile with PCRE2"), std::string::npos) << refusal(j);
  EXPECT_NE(refusal(json::array()).find("dir/tokenizer.json"), std::string::npos);
  std::unique_ptr<Tokenizer> t;
  Status s = MakeHfTokenizer("{not json", "dir/tokenizer.json", &t);
  EXPECT_EQ(s.code(), Status::Code::kCorruption);
}

// Gpt2Like with more special added tokens (ids 266, 267, ...) and a post-processor.
json WithSpecials(const std::vector<std::string>& specials, const json& post_processor) {
  json j = Gpt2Like(kMerges);
  for (const std::string& s : specials) {
    j["added_tokens"].push_back({{"id", 266 + static_cast<int>(j["added_tokens"].size()) - 1},
                                 {"content", s},
                                 {"special", true}});
  }
  j["post_processor"] = post_processor;
  return j;
}

json Template(const json& single, const std::vector<std::pair<std::string, int>>& tokens) {
  json specials = json::object();
  for (const auto& [t, id] : tokens) specials[t] = {{"id", t}, {"ids", {id}}, {"tokens", {t}}};
  return {{"type", "TemplateProcessing"},
          {"single", single},
          {"pair", json::array()},
          {"special_tokens", specials}};
}

json Special(const std::string& t) { return {{"SpecialToken", {{"id", t}, {"type_id", 0}}}}; }
const json kA = {{"Sequence", {{"id", "A"}, {"type_id", 0}}}};

std::unique_ptr<Tokenizer> MakeHfWith(const json& j, bool add_special_tokens) {
  std::unique_ptr<Tokenizer> t;
  HfTokenizerOptions o;
  o.add_special_tokens = add_special_tokens;
  EXPECT_OK(MakeHfTokenizer(j.dump(), "tokenizer.json", o, &t));
  return t;
}

// Llama 3's shape: a Sequence of ByteLevel and a template that puts a BOS before the text, as HF's
// encode does by default (add_special_tokens=True); the end of document stays <|endoftext|>.
TEST(HfPostProcessor, TemplateBosFollowsTheSwitch) {
  const json j = WithSpecials(
      {"<|begin_of_text|>"},
      {{"type", "Sequence"},
       {"processors",
        {{{"type", "ByteLevel"}, {"trim_offsets", false}},
         Template({Special("<|begin_of_text|>"), kA}, {{"<|begin_of_text|>", 266}})}}});
  auto with = MakeHf(j);  // HF's default
  EXPECT_EQ(Encode(*with, "hello world"), (std::vector<int32_t>{266, 259, 264}));
  EXPECT_EQ(Encode(*with, ""), (std::vector<int32_t>{266}));
  EXPECT_EQ(with->end_of_document_id(), 265);
  EXPECT_FALSE(with->encode_ends_document());
  auto without = MakeHfWith(j, false);
  EXPECT_EQ(Encode(*without, "hello world"), (std::vector<int32_t>{259, 264}));
}

// A template that closes the text: its closing token ends documents, and with the switch on
// Encode already ends with it, so shardify and the loader append no second one.
TEST(HfPostProcessor, ClosingTokenIsTheEndOfDocument) {
  const json j = WithSpecials({"<s>", "</s>"}, Template({Special("<s>"), kA, Special("</s>")},
                                                        {{"<s>", 266}, {"</s>", 267}}));
  // <|endoftext|> and </s> both name an end of text, but the post-processor says which it is.
  auto with = MakeHf(j);
  EXPECT_EQ(Encode(*with, "hello"), (std::vector<int32_t>{266, 259, 267}));
  EXPECT_EQ(with->end_of_document_id(), 267);
  EXPECT_TRUE(with->encode_ends_document());
  auto without = MakeHfWith(j, false);
  EXPECT_EQ(Encode(*without, "hello"), (std::vector<int32_t>{259}));
  EXPECT_EQ(without->end_of_document_id(), 267);
  EXPECT_FALSE(without->encode_ends_document());
  const json roberta = WithSpecials({"<s>", "</s>"}, {{"type", "RobertaProcessing"},
                                                      {"sep", {"</s>", 267}},
                                                      {"cls", {"<s>", 266}},
                                                      {"trim_offsets", true},
                                                      {"add_prefix_space", false}});
  EXPECT_EQ(Encode(*MakeHf(roberta), "hello"), (std::vector<int32_t>{266, 259, 267}));
  // Two closing tokens: the last one appended ends the text.
  const json both = WithSpecials(
      {"<s>", "</s>"},
      {{"type", "Sequence"},
       {"processors",
        {Template({Special("<s>"), kA, Special("</s>")}, {{"<s>", 266}, {"</s>", 267}}),
         Template({kA, Special("<|endoftext|>")}, {{"<|endoftext|>", 265}})}}});
  auto twice = MakeHf(both);
  EXPECT_EQ(Encode(*twice, "hello"), (std::vector<int32_t>{266, 259, 267, 265}));
  EXPECT_EQ(twice->end_of_document_id(), 265);
  EXPECT_TRUE(twice->encode_ends_document());
}

TEST(HfPostProcessor, EndOfDocumentIsRefusedWhenAmbiguousAndCanBeNamed) {
  const json j = WithSpecials({"</s>"}, {{"type", "ByteLevel"}});
  std::unique_ptr<Tokenizer> t;
  Status s = MakeHfTokenizer(j.dump(), "dir/tokenizer.json", &t);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("dir/tokenizer.json: the end of a document is ambiguous"),
            std::string::npos)
      << s.ToString();
  EXPECT_NE(s.message().find("<|endoftext|> (id 265), </s> (id 266)"), std::string::npos);
  EXPECT_NE(s.message().find("--eod-token"), std::string::npos);
  HfTokenizerOptions o;
  o.end_of_document_token = "</s>";
  ASSERT_OK(MakeHfTokenizer(j.dump(), "dir/tokenizer.json", o, &t));
  EXPECT_EQ(t->end_of_document_id(), 266);
  o.end_of_document_token = "<|nope|>";
  s = MakeHfTokenizer(j.dump(), "dir/tokenizer.json", o, &t);
  EXPECT_NE(s.message().find("\"<|nope|>\" is not a token of the file"), std::string::npos)
      << s.ToString();
  // A chat model's end of turn is not an end of text: Qwen's <|endoftext|> wins over it, and
  // it serves only where nothing else does.
  ASSERT_OK(MakeHfTokenizer(WithSpecials({"<|im_end|>"}, nullptr).dump(), "q.json", &t));
  EXPECT_EQ(t->end_of_document_id(), 265);
  json only_turn = WithSpecials({"<|im_end|>"}, nullptr);
  only_turn["added_tokens"][0]["content"] = "<|other|>";
  ASSERT_OK(MakeHfTokenizer(only_turn.dump(), "q.json", &t));
  EXPECT_EQ(t->end_of_document_id(), 266);
  // The same token listed twice is no ambiguity.
  json twice = Gpt2Like(kMerges);
  twice["added_tokens"].push_back(twice["added_tokens"][0]);
  ASSERT_OK(MakeHfTokenizer(twice.dump(), "t.json", &t));
  EXPECT_EQ(t->end_of_document_id(), 265);
  // Only special tokens count: a plain added token named like an end of text is text.
  json plain = WithSpecials({"</s>"}, nullptr);
  plain["added_tokens"][1]["special"] = false;
  ASSERT_OK(MakeHfTokenizer(plain.dump(), "p.json", &t));
  EXPECT_EQ(t->end_of_document_id(), 265);
}

TEST(HfPostProcessor, RefusesWhatItCannotApplyNamingThePath) {
  auto refusal = [](const json& post) {
    std::unique_ptr<Tokenizer> t;
    Status s = MakeHfTokenizer(WithSpecials({"<s>"}, post).dump(), "dir/tokenizer.json", &t);
    EXPECT_FALSE(s.ok());
    return s.message();
  };
  EXPECT_EQ(refusal({{"type", "Lowercase"}}),
            "dir/tokenizer.json: post_processor.type \"Lowercase\" is not supported (supported: "
            "ByteLevel, TemplateProcessing, RobertaProcessing, BertProcessing, Sequence)");
  const json b = {{"Sequence", {{"id", "B"}, {"type_id", 1}}}};
  EXPECT_NE(refusal(Template({Special("<s>"), b}, {{"<s>", 266}}))
                .find("post_processor.single[1].Sequence.id"),
            std::string::npos);
  EXPECT_NE(refusal(Template({Special("<s>"), kA}, {}))
                .find("\"<s>\" (used by "
                      "post_processor.single[0]) has no"),
            std::string::npos);
  EXPECT_NE(
      refusal(Template(json::array({Special("<s>")}), {{"<s>", 266}})).find("has no {\"Sequence\""),
      std::string::npos);
  EXPECT_NE(refusal(Template({Special("<s>"), kA}, {{"<s>", 9999}}))
                .find("the post-processor's id 9999 is not a token"),
            std::string::npos);
}

// The merge rule written plainly on strings: merge the adjacent pair of lowest rank (leftmost
// among equals) until none is left. The model must agree on short pieces (rank scan) and long
// ones (heap).
std::vector<std::string> ReferenceBpe(const std::string& piece,
                                      const std::map<std::pair<std::string, std::string>, int>& r) {
  std::vector<std::string> s;
  for (char c : piece) s.push_back(std::string(1, c));
  for (;;) {
    int best = -1, best_rank = INT32_MAX;
    for (size_t i = 0; i + 1 < s.size(); ++i) {
      auto it = r.find({s[i], s[i + 1]});
      if (it != r.end() && it->second < best_rank) best = i, best_rank = it->second;
    }
    if (best < 0) return s;
    s[best] += s[best + 1];
    s.erase(s.begin() + best + 1);
  }
}

TEST(BpeModel, AgreesWithThePlainMergeRuleOnShortAndLongPieces) {
  std::mt19937 rng(7);
  std::vector<std::pair<std::string, std::string>> merges;
  std::map<std::pair<std::string, std::string>, int> ranks;
  std::vector<std::string> tokens = {"a", "b", "c"};
  std::set<std::string> seen(tokens.begin(), tokens.end());
  while (merges.size() < 40) {
    const std::string x = tokens[rng() % tokens.size()], y = tokens[rng() % tokens.size()];
    if (seen.count(x + y) || (x + y).size() > 6) continue;
    seen.insert(x + y);
    ranks[{x, y}] = static_cast<int>(merges.size());
    merges.emplace_back(x, y);
    tokens.push_back(x + y);
  }
  json j = Gpt2Like(merges);
  j["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}};
  auto t = MakeHf(j);
  json vocab = j["model"]["vocab"];
  for (size_t len : {2, 5, 17, 64, 255, 256, 257, 300, 1000, 3000}) {
    for (int rep = 0; rep < 5; ++rep) {
      std::string piece;
      for (size_t i = 0; i < len; ++i) piece += "abc"[rng() % 3];
      std::vector<int32_t> want;
      for (const std::string& tok : ReferenceBpe(piece, ranks))
        want.push_back(vocab[Alphabet(tok)].get<int32_t>());
      EXPECT_EQ(Encode(*t, piece), want) << "length " << len;
      EXPECT_EQ(Encode(*t, piece), want) << "length " << len << ", from the cache";
    }
  }
}

TEST(BpeModel, SameIdsFromFourThreads) {
  auto t = MakeHf(Gpt2Like(kMerges));
  std::vector<std::string> texts;
  for (int i = 0; i < 200; ++i)
    texts.push_back("hello world " + std::to_string(i * 7919) + " held the world, hello!");
  std::vector<std::vector<int32_t>> want;
  for (const auto& x : texts) want.push_back(Encode(*t, x));
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int k = 0; k < 4; ++k) {
    threads.emplace_back([&] {
      for (int round = 0; round < 20; ++round)
        for (size_t i = 0; i < texts.size(); ++i) {
          std::vector<int32_t> ids;
          if (!t->Encode(texts[i], &ids).ok() || ids != want[i]) ++mismatches;
        }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

TEST(PretokenizeRegex, WhitespaceIsUnicodeWhiteSpaceNotPcre2s) {
  // U+180E is not White_Space (Unicode 6.3 on), but PCRE2's UCP \s takes it; Oniguruma and
  // fancy-regex do not.
  std::unique_ptr<PretokenizeRegex> re;
  ASSERT_OK(PretokenizeRegex::Compile(R"(\s+|[^\s]+)", RegexDialect::kOniguruma, "test", &re));
  std::vector<std::string> pieces;
  const std::string text =
      "a\xE1\xA0\x8E"
      "b \xE3\x80\x80x";  // a U+180E b, space, U+3000, x
  ASSERT_OK(
      re->ForEachMatch(text, [&](size_t b, size_t e) { pieces.push_back(text.substr(b, e - b)); }));
  EXPECT_EQ(pieces, (std::vector<std::string>{"a\xE1\xA0\x8E"
                                              "b",
                                              " \xE3\x80\x80", "x"}));
}

TEST(PretokenizeRegex, DollarFollowsEachEngine) {
  // tiktoken's "\s++$" (fancy-regex: end of text only) against Oniguruma's end of line.
  std::unique_ptr<PretokenizeRegex> fancy, onig;
  ASSERT_OK(PretokenizeRegex::Compile(R"(x$)", RegexDialect::kFancyRegex, "test", &fancy));
  ASSERT_OK(PretokenizeRegex::Compile(R"(x$)", RegexDialect::kOniguruma, "test", &onig));
  int n_fancy = 0, n_onig = 0;
  ASSERT_OK(fancy->ForEachMatch("x\nx\n", [&](size_t, size_t) { ++n_fancy; }));
  ASSERT_OK(onig->ForEachMatch("x\nx\n", [&](size_t, size_t) { ++n_onig; }));
  EXPECT_EQ(n_fancy, 0);
  EXPECT_EQ(n_onig, 2);
}

std::string Base64(const std::string& raw) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < raw.size(); i += 3) {
    const uint32_t n = (uint8_t(raw[i]) << 16) | (uint8_t(raw[i + 1]) << 8) | uint8_t(raw[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out += k[(n >> s) & 63];
  }
  if (raw.size() - i == 1) {
    const uint32_t n = uint8_t(raw[i]) << 16;
    out += std::string{k[n >> 18], k[(n >> 12) & 63], '=', '='};
  } else if (raw.size() - i == 2) {
    const uint32_t n = (uint8_t(raw[i]) << 16) | (uint8_t(raw[i + 1]) << 8);
    out += std::string{k[n >> 18], k[(n >> 12) & 63], k[(n >> 6) & 63], '='};
  }
  return out;
}

std::string RankFile(const std::vector<std::string>& extra) {
  std::string f;
  for (int b = 0; b < 256; ++b)
    f += Base64(std::string(1, char(b))) + " " + std::to_string(b) + "\n";
  for (size_t i = 0; i < extra.size(); ++i)
    f += Base64(extra[i]) + " " + std::to_string(256 + i) + "\n";
  return f;
}

TEST(TiktokenTokenizer, MergesByRankAndTakesWholePiecesFirst) {
  std::unique_ptr<Tokenizer> t;
  ASSERT_OK(MakeTiktokenTokenizer(
      RankFile({"ll", "he", "hell", "hello", " w", "or", "ld", " wor", " world"}), "test.tiktoken",
      "cl100k_base", &t));
  // "hello" is a token: taken whole. " world": merges " w"+"or" then ... as ranks allow.
  EXPECT_EQ(Encode(*t, "hello world"), (std::vector<int32_t>{259, 264}));
  EXPECT_EQ(Encode(*t, "hell<|endoftext|>"), (std::vector<int32_t>{258, 100257}));
  EXPECT_EQ(t->end_of_document_id(), 100257);
  EXPECT_EQ(t->vocab_size(), 100277);
  EXPECT_EQ(t->type(), "tiktoken");
  const std::string text = "hello <|endofprompt|> world\r\n  123456 ünï ✓";
  EXPECT_EQ(Decode(*t, Encode(*t, text)), text);
}

TEST(TiktokenTokenizer, RefusesBadLinesNamingTheLine) {
  std::unique_ptr<Tokenizer> t;
  Status s = MakeTiktokenTokenizer(RankFile({}) + "aGk= 300\nnot-base64! 301\n", "x.tiktoken",
                                   "cl100k_base", &t);
  EXPECT_EQ(s.code(), Status::Code::kCorruption);
  EXPECT_NE(s.message().find("x.tiktoken: line 258"), std::string::npos) << s.ToString();
  s = MakeTiktokenTokenizer(RankFile({}) + "aGk= 3\n", "x.tiktoken", "cl100k_base", &t);
  EXPECT_NE(s.message().find("line 257: rank 3 is given twice"), std::string::npos) << s.ToString();
  s = MakeTiktokenTokenizer(RankFile({}), "x.tiktoken", "p99k", &t);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(s.message().find("unknown tiktoken encoding \"p99k\""), std::string::npos);
}

}  // namespace
}  // namespace sluice::features
