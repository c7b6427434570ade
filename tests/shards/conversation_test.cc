#include "shards/conversation.h"

#include <gtest/gtest.h>

#include "assert_ok.h"
#include "shards/coding.h"
#include "shards/record.h"

namespace sluice::shards {
namespace {

std::vector<TurnEntry> SampleTurns() {
  return {{Role::kSystem, false, 5, 2, 0},
          {Role::kUser, true, 0, 0, 3},
          {Role::kUser, true, 3, 1, 2},
          {Role::kAssistant, false, 4, 2, 0}};
}

TEST(TurnTable, RoundTripsEveryField) {
  std::string bytes;
  EncodeTurnTable(SampleTurns(), &bytes);
  ASSERT_EQ(bytes.size(), kTurnTableHeaderSize + 4 * kTurnEntrySize);
  std::vector<TurnEntry> back;
  ASSERT_OK(DecodeTurnTable(bytes, "r", &back));
  ASSERT_EQ(back.size(), 4u);
  for (size_t i = 0; i < back.size(); ++i) {
    EXPECT_EQ(back[i].role, SampleTurns()[i].role);
    EXPECT_EQ(back[i].has_audio, SampleTurns()[i].has_audio);
    EXPECT_EQ(back[i].text_bytes, SampleTurns()[i].text_bytes);
    EXPECT_EQ(back[i].tokens, SampleTurns()[i].tokens);
    EXPECT_EQ(back[i].samples, SampleTurns()[i].samples);
  }
}

TEST(TurnTable, DamageIsCorruptionNamingTheTurn) {
  std::string good;
  EncodeTurnTable(SampleTurns(), &good);
  std::vector<TurnEntry> t;
  auto fails = [&](std::string bytes, const std::string& says) {
    Status st = DecodeTurnTable(bytes, "shard-00000.sluice: record 3", &t);
    EXPECT_TRUE(st.IsCorruption()) << says;
    EXPECT_NE(st.message().find(says), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("record 3"), std::string::npos) << st.message();
  };
  fails(good.substr(0, 7), "shorter than its 8-byte header");
  fails(good.substr(0, good.size() - 1), "turns take");
  std::string b = good;
  b[4] = 1;
  fails(b, "reserved bytes 4..7");
  b = good;
  EncodeFixed32(b.data(), kMaxTurns + 1);
  fails(b, "over the limit");
  b = good;
  b[kTurnTableHeaderSize + kTurnEntrySize] = 3;  // turn 1's role
  fails(b, "turn 1: unknown role 3");
  b = good;
  b[kTurnTableHeaderSize + 1] = 2;  // turn 0's has_audio
  fails(b, "turn 0: has_audio is 2");
  b = good;
  b[kTurnTableHeaderSize + 3 * kTurnEntrySize + 2] = 1;
  fails(b, "turn 3: reserved bytes");
  b = good;
  EncodeFixed32(b.data() + kTurnTableHeaderSize + 12, 9);  // samples on turn 0, a text turn
  fails(b, "turn 0: 9 samples without audio");
}

// A record laid out as shardify conversations writes it.
std::string SampleRecord(bool with_ids) {
  RecordBuilder b;
  std::string table;
  EncodeTurnTable(SampleTurns(), &table);
  b.AddField(FieldType::kTurns, table);
  b.AddField(FieldType::kText, std::string("helloyesdone"));
  const uint32_t ids[] = {10, 11, 12, 13, 14};
  if (with_ids) b.AddField(FieldType::kTokens, ids, sizeof ids);
  const int16_t pcm[] = {1, 2, 3, 4, 5};
  b.AddField(FieldType::kAudioPcm16, pcm, sizeof pcm);
  return b.data();
}

TEST(Conversation, DecodesEachTurnsTextIdsAndAudioSpan) {
  const std::string rec = SampleRecord(true);
  RecordView v;
  ASSERT_OK(ParseRecord(rec.data(), rec.size(), "r", &v));
  std::vector<ConversationTurn> turns;
  ASSERT_OK(DecodeConversation(v, "r", &turns));
  ASSERT_EQ(turns.size(), 4u);
  EXPECT_EQ(turns[0].text, "hello");
  EXPECT_EQ(std::vector<uint32_t>(turns[0].tokens.begin(), turns[0].tokens.end()),
            (std::vector<uint32_t>{10, 11}));
  EXPECT_EQ(turns[1].text, "");
  EXPECT_EQ(turns[1].first_sample, 0u);
  EXPECT_EQ(turns[1].entry.samples, 3u);
  EXPECT_EQ(turns[2].text, "yes");
  EXPECT_EQ(turns[2].tokens.size(), 1u);
  EXPECT_EQ(turns[2].tokens[0], 12u);
  EXPECT_TRUE(turns[2].ids_stored);
  EXPECT_EQ(turns[2].first_sample, 3u);
  EXPECT_EQ(turns[3].text, "done");
  EXPECT_EQ(turns[3].tokens[1], 14u);
  EXPECT_EQ(TotalSamples(std::vector<TurnEntry>(SampleTurns())), 5u);
}

TEST(Conversation, RecordWithoutIdsHasEmptyTokenSpans) {
  const std::string rec = SampleRecord(false);
  RecordView v;
  ASSERT_OK(ParseRecord(rec.data(), rec.size(), "r", &v));
  std::vector<ConversationTurn> turns;
  ASSERT_OK(DecodeConversation(v, "r", &turns));
  EXPECT_TRUE(turns[0].tokens.empty());
  EXPECT_FALSE(turns[0].ids_stored);
  EXPECT_EQ(turns[0].entry.tokens, 2u);  // the count stays in the table
}

TEST(Conversation, AnEmptyTokensFieldMustStillMatchTheTurns) {
  RecordBuilder b;
  std::string table;
  EncodeTurnTable(SampleTurns(), &table);  // 5 ids in all
  b.AddField(FieldType::kTurns, table);
  b.AddField(FieldType::kText, std::string("helloyesdone"));
  b.AddField(FieldType::kTokens, "", 0);
  RecordView v;
  ASSERT_OK(ParseRecord(b.data().data(), b.data().size(), "r", &v));
  std::vector<ConversationTurn> turns;
  Status st = DecodeConversation(v, "r", &turns);
  EXPECT_TRUE(st.IsCorruption());
  EXPECT_NE(st.message().find("turns hold 5 token ids, the tokens field 0"), std::string::npos)
      << st.message();
}

TEST(Conversation, LengthsThatDoNotAddUpAreCorruption) {
  RecordBuilder b;
  std::string table;
  EncodeTurnTable(SampleTurns(), &table);
  b.AddField(FieldType::kTurns, table);
  b.AddField(FieldType::kText, std::string("hello"));  // 12 bytes expected
  RecordView v;
  ASSERT_OK(ParseRecord(b.data().data(), b.data().size(), "r", &v));
  std::vector<ConversationTurn> turns;
  Status st = DecodeConversation(v, "r", &turns);
  EXPECT_TRUE(st.IsCorruption());
  EXPECT_NE(st.message().find("12 bytes of text, the text field 5"), std::string::npos)
      << st.message();
  RecordBuilder plain;
  plain.AddField(FieldType::kText, std::string("x"));
  ASSERT_OK(ParseRecord(plain.data().data(), plain.data().size(), "r", &v));
  EXPECT_TRUE(DecodeConversation(v, "r", &turns).IsCorruption());
}

}  // namespace
}  // namespace sluice::shards
