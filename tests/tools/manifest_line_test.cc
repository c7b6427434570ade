// shardify audio's JSONL manifest line parser (tools/shardify/manifest_line.h), without audio:
// what a line yields, why a line is rejected, and the inputs input_manifest_fuzzer found.
#include "manifest_line.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "assert_ok.h"
#include "fuzz_regression.h"

namespace sluice::shardify {
namespace {

TEST(ManifestLineTest, KeyIsTheIdOrThePathWithItsSpan) {
  ManifestLine l;
  std::vector<int32_t> ids;
  std::string why;
  ASSERT_TRUE(ParseManifestLine(
      R"({"audio_filepath": "a.wav", "text": "hi", "offset": 1.5, "duration": 2})", nullptr, &l,
      &ids, &why))
      << why;
  EXPECT_EQ(l.audio_filepath, "a.wav");
  EXPECT_EQ(l.text, "hi");
  EXPECT_EQ(l.key, "a.wav@1.5+2");
  EXPECT_EQ(l.decode.offset_seconds, 1.5);
  EXPECT_EQ(l.decode.duration_seconds, 2);
  ASSERT_TRUE(ParseManifestLine(R"({"audio_filepath": "a.wav", "text": "hi", "offset": 0.25})",
                                nullptr, &l, &ids, &why));
  EXPECT_EQ(l.key, "a.wav@0.25+end");
  ASSERT_TRUE(ParseManifestLine(R"({"audio_filepath": "a.wav", "text": "", "id": "u1"})", nullptr,
                                &l, &ids, &why));
  EXPECT_EQ(l.key, "u1");
}

TEST(ManifestLineTest, TranscriptIsEncodedWithTheTokenizer) {
  std::unique_ptr<features::Tokenizer> tok;
  ASSERT_OK(features::MakeCharTokenizer({" ", "h", "i"}, {}, &tok));
  ManifestLine l;
  std::vector<int32_t> ids = {99};
  std::string why;
  ASSERT_TRUE(ParseManifestLine(R"({"audio_filepath": "a.wav", "text": "Hi hi"})", tok.get(), &l,
                                &ids, &why))
      << why;
  EXPECT_EQ(ids, (std::vector<int32_t>{3, 4, 2, 3, 4}));
  EXPECT_FALSE(ParseManifestLine(R"({"audio_filepath": "a.wav", "text": "xyz"})", tok.get(), &l,
                                 &ids, &why));
  EXPECT_EQ(why.rfind("transcript: ", 0), 0u) << why;
}

// Found by input_manifest_fuzzer: a number outside double's range is nlohmann's out_of_range,
// not parse_error; it escaped ParseManifestLine and stopped the whole shardify run with
// "internal error" instead of rejecting the one line.
TEST(ManifestLineTest, NumberOutOfRangeIsARejectedLine) {
  std::string line = sluice::testing::FuzzRegression("input_manifest", "number-overflow.jsonl");
  ASSERT_FALSE(line.empty());
  if (line.back() == '\n') line.pop_back();
  ManifestLine l;
  std::vector<int32_t> ids;
  std::string why;
  EXPECT_FALSE(ParseManifestLine(line, nullptr, &l, &ids, &why));
  EXPECT_EQ(why.rfind("invalid JSON: ", 0), 0u) << why;
  EXPECT_NE(why.find("number overflow"), std::string::npos) << why;
}

}  // namespace
}  // namespace sluice::shardify
