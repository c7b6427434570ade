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

// An offset of 1e15 s overflowed the sample count in the decoder, which then asked for a vector
// of 2^63 floats: "internal error: vector::reserve" stopped the run, nothing rejected. Every
// number is range-checked here, where the line is read, and the reason names the field.
TEST(ManifestLineTest, AbsurdOffsetsAndDurationsAreRejectedNamingTheField) {
  ManifestLine l;
  std::vector<int32_t> ids;
  std::string why;
  for (const std::string field : {"offset", "duration"}) {
    for (const std::string value : {"1e15", "-1", "1e300", "1e8", "\"3\"", "true"}) {
      const std::string line =
          R"({"audio_filepath": "a.wav", "text": "hi", ")" + field + "\": " + value + "}";
      EXPECT_FALSE(ParseManifestLine(line, nullptr, &l, &ids, &why)) << line;
      EXPECT_EQ(why.rfind("\"" + field + "\" ", 0), 0u) << line << ": " << why;
      if (value == "1e15")
        EXPECT_NE(why.find("at most " + FormatSeconds(kMaxManifestSeconds)), std::string::npos)
            << why;
    }
    // A day-long recording is fine.
    EXPECT_TRUE(
        ParseManifestLine(R"({"audio_filepath": "a.wav", "text": "hi", ")" + field + "\": 86400}",
                          nullptr, &l, &ids, &why))
        << why;
  }
}

}  // namespace
}  // namespace sluice::shardify
