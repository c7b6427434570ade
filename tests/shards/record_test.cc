#include "shards/record.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "shards/coding.h"
#include "assert_ok.h"

namespace sluice::shards {
namespace {

TEST(Record, EveryFieldTypeRoundTrips) {
  std::vector<int16_t> pcm = {0, 1, -1, 32767, -32768, 1234};
  std::string flac = "fLaC\x00\x01 not really flac";
  std::string text = "héllo wörld";
  std::vector<uint32_t> tokens = {1, 2, 3, 4000000000u};
  std::string feats(8 + 2 * 3 * 2, '\x11');
  RecordBuilder b;
  b.AddField(FieldType::kAudioPcm16, pcm.data(), pcm.size() * 2);
  b.AddField(FieldType::kAudioFlac, flac);
  b.AddField(FieldType::kText, text);
  b.AddField(FieldType::kTokens, tokens.data(), tokens.size() * 4);
  b.AddField(FieldType::kFeaturesF16, feats);
  EXPECT_EQ(b.data().size() % kFieldAlign, 0u);

  RecordView v;
  ASSERT_OK(ParseRecord(b.data().data(), b.data().size(), "test", &v));
  ASSERT_EQ(v.num_fields, 5u);
  const FieldView* f = v.Find(FieldType::kAudioPcm16);
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(f->size, pcm.size() * 2);
  EXPECT_EQ(std::memcmp(f->data, pcm.data(), f->size), 0);
  EXPECT_EQ(v.Find(FieldType::kAudioFlac)->bytes(), flac);
  EXPECT_EQ(v.Find(FieldType::kText)->bytes(), text);
  EXPECT_EQ(DecodeFixed32(v.Find(FieldType::kTokens)->data + 12), 4000000000u);
  EXPECT_EQ(v.Find(FieldType::kFeaturesF16)->bytes(), feats);
}

TEST(Record, FieldsStartAligned) {
  RecordBuilder b;
  b.AddField(FieldType::kText, "abc");  // 3 bytes, padded to 8
  std::vector<int16_t> pcm(5, 7);
  b.AddField(FieldType::kAudioPcm16, pcm.data(), 10);
  RecordView v;
  ASSERT_OK(ParseRecord(b.data().data(), b.data().size(), "test", &v));
  EXPECT_EQ((v.Find(FieldType::kAudioPcm16)->data - b.data().data()) % kFieldAlign, 0);
}

TEST(Record, EmptyPayloadHasNoFields) {
  RecordView v;
  ASSERT_OK(ParseRecord("", 0, "test", &v));
  EXPECT_EQ(v.num_fields, 0u);
  EXPECT_EQ(v.Find(FieldType::kText), nullptr);
}

class RecordDamage : public ::testing::Test {
 protected:
  void SetUp() override {
    RecordBuilder b;
    b.AddField(FieldType::kText, "hello");
    data_ = b.data();
  }
  Status Parse() {
    RecordView v;
    return ParseRecord(data_.data(), data_.size(), "shard-00000.sluice: record 3", &v);
  }
  std::string data_;
};

TEST_F(RecordDamage, UnknownTypeIsCorruption) {
  data_[0] = 99;
  Status s = Parse();
  EXPECT_TRUE(s.IsCorruption());
  EXPECT_NE(s.message().find("record 3"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("unknown field type 99"), std::string::npos) << s.ToString();
}

TEST_F(RecordDamage, NonZeroReservedByteIsCorruption) {
  data_[2] = 1;
  EXPECT_TRUE(Parse().IsCorruption());
}

TEST_F(RecordDamage, OverrunningLengthIsCorruption) {
  EncodeFixed32(data_.data() + 4, 1000);
  EXPECT_TRUE(Parse().IsCorruption());
}

TEST_F(RecordDamage, HugeLengthDoesNotOverflow) {
  EncodeFixed32(data_.data() + 4, 0xFFFFFFFFu);
  EXPECT_TRUE(Parse().IsCorruption());
}

TEST_F(RecordDamage, NonZeroPaddingIsCorruption) {
  data_[kFieldHeaderSize + 6] = 'x';
  EXPECT_TRUE(Parse().IsCorruption());
}

TEST_F(RecordDamage, TruncatedHeaderIsCorruption) {
  data_ += std::string(4, '\0');
  EXPECT_TRUE(Parse().IsCorruption());
}

TEST_F(RecordDamage, RepeatedFieldIsCorruption) {
  data_ += data_;
  EXPECT_TRUE(Parse().IsCorruption());
}

}  // namespace
}  // namespace sluice::shards
