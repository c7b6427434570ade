// shards/fields.h: the kFeaturesF16 and kTokens layouts round-trip through a real record, and a
// field whose size disagrees with its header is Corruption naming where it was read.
#include "shards/fields.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "assert_ok.h"
#include "shards/coding.h"
#include "shards/record.h"

namespace sluice::shards {
namespace {

// The field of type `type` after a trip through RecordBuilder and ParseRecord, which keeps it in
// `*payload` (FieldView points into it).
FieldView ThroughRecord(FieldType type, const void* data, size_t size, std::string* payload) {
  RecordBuilder b;
  b.AddField(FieldType::kText, "xyz");  // so the field does not start the record
  b.AddField(type, data, size);
  *payload = b.data();
  RecordView v;
  EXPECT_OK(ParseRecord(payload->data(), payload->size(), "t", &v));
  const FieldView* f = v.Find(type);
  return f ? *f : FieldView{};
}

TEST(FeaturesF16, RoundTripsShapeAndValues) {
  const uint32_t frames = 3, bins = 5;
  std::vector<uint16_t> field;
  uint16_t* values = EncodeFeaturesF16(frames, bins, &field);
  ASSERT_EQ(field.size() * 2, FeaturesF16Size(frames, bins));
  ASSERT_EQ(field.size() * 2, 8u + 3 * 5 * 2);
  for (uint32_t i = 0; i < frames * bins; ++i) values[i] = static_cast<uint16_t>(0x3c00 + 7 * i);

  std::string payload;
  const FieldView f =
      ThroughRecord(FieldType::kFeaturesF16, field.data(), field.size() * 2, &payload);
  // The header is frames u32 LE then bins u32 LE (docs/formats/shard.md).
  EXPECT_EQ(DecodeFixed32(f.data), frames);
  EXPECT_EQ(DecodeFixed32(f.data + 4), bins);
  FeaturesF16View v;
  ASSERT_OK(DecodeFeaturesF16(f, "shard-00000.sluice", &v));
  EXPECT_EQ(v.frames, frames);
  EXPECT_EQ(v.bins, bins);
  for (uint32_t i = 0; i < frames * bins; ++i)
    EXPECT_EQ(v.values[i], static_cast<uint16_t>(0x3c00 + 7 * i)) << "value " << i;
}

TEST(FeaturesF16, EmptyShapeRoundTrips) {
  std::vector<uint16_t> field;
  EncodeFeaturesF16(0, 80, &field);
  std::string payload;
  const FieldView f =
      ThroughRecord(FieldType::kFeaturesF16, field.data(), field.size() * 2, &payload);
  FeaturesF16View v;
  ASSERT_OK(DecodeFeaturesF16(f, "t", &v));
  EXPECT_EQ(v.frames, 0u);
  EXPECT_EQ(v.bins, 80u);
}

// A field of `size` bytes whose header claims [frames, bins].
std::string Field(uint32_t frames, uint32_t bins, size_t size) {
  std::string s(size, '\0');
  if (size >= 4) EncodeFixed32(s.data(), frames);
  if (size >= 8) EncodeFixed32(s.data() + 4, bins);
  return s;
}

TEST(FeaturesF16, SizeThatDisagreesWithTheHeaderIsCorruption) {
  struct Case {
    const char* what;
    std::string bytes;
  } cases[] = {
      {"empty", ""},
      {"short header", Field(1, 1, 6)},
      {"odd length", Field(1, 1, 11)},
      {"one value short", Field(2, 3, 8 + 2 * 6 - 2)},
      {"one value long", Field(2, 3, 8 + 2 * 6 + 2)},
      {"shape whose byte count overflows 64 bits", Field(0xffffffffu, 0xffffffffu, 8 + 2)},
  };
  for (const Case& c : cases) {
    const FieldView f{FieldType::kFeaturesF16, c.bytes.data(),
                      static_cast<uint32_t>(c.bytes.size())};
    FeaturesF16View v;
    const Status s = DecodeFeaturesF16(f, "shard-00002.sluice: record 'utt7'", &v);
    EXPECT_TRUE(s.IsCorruption()) << c.what << ": " << s.ToString();
    EXPECT_NE(s.message().find("shard-00002.sluice: record 'utt7'"), std::string::npos) << c.what;
    EXPECT_EQ(v.values, nullptr) << c.what;
  }
}

TEST(Tokens, RoundTripU32Ids) {
  const std::vector<uint32_t> ids = {0, 1, 2147483647u, 2147483648u, 4000000000u};
  std::string payload;
  const FieldView f = ThroughRecord(FieldType::kTokens, ids.data(), ids.size() * 4, &payload);
  std::span<const uint32_t> got;
  ASSERT_OK(DecodeTokens(f, "t", &got));
  EXPECT_EQ(std::vector<uint32_t>(got.begin(), got.end()), ids);
}

TEST(Tokens, PartialIdIsCorruption) {
  const std::string bytes(7, '\1');
  const FieldView f{FieldType::kTokens, bytes.data(), 7};
  std::span<const uint32_t> got;
  const Status s = DecodeTokens(f, "shard-00001.sluice: record 'doc3'", &got);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.message().find("record 'doc3'"), std::string::npos) << s.ToString();
  EXPECT_TRUE(got.empty());
}

}  // namespace
}  // namespace sluice::shards
