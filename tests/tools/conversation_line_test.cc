// shardify conversations' JSONL line parser (tools/shardify/conversation_line.h), without audio:
// each accepted spelling (ours, NeMo's multi-turn, ShareGPT's) and each reason a line is rejected.
#include "conversation_line.h"

#include <gtest/gtest.h>

#include <string>

namespace sluice::shardify {
namespace {

using shards::Role;

ConversationLine Parse(const std::string& line) {
  ConversationLine c;
  std::string why;
  EXPECT_TRUE(ParseConversationLine(line, "f.jsonl:7", &c, &why)) << why;
  return c;
}

std::string Reason(const std::string& line) {
  ConversationLine c;
  std::string why;
  EXPECT_FALSE(ParseConversationLine(line, "f.jsonl:7", &c, &why)) << line;
  return why;
}

TEST(ConversationLineTest, OurSpellingWithSystemPromptAndAudioSpan) {
  const ConversationLine c = Parse(
      R"({"id": "c1", "system": "be brief", "turns": [)"
      R"({"role": "user", "text": "listen", "audio": {"path": "a.wav", "offset": 0.5, "duration": 2}},)"
      R"({"role": "Assistant", "text": "ok"}]})");
  EXPECT_EQ(c.key, "c1");
  ASSERT_EQ(c.turns.size(), 3u);
  EXPECT_EQ(c.turns[0].role, Role::kSystem);
  EXPECT_EQ(c.turns[0].text, "be brief");
  EXPECT_EQ(c.turns[1].role, Role::kUser);
  EXPECT_EQ(c.turns[1].text, "listen");
  EXPECT_EQ(c.turns[1].audio_path, "a.wav");
  EXPECT_EQ(c.turns[1].decode.offset_seconds, 0.5);
  EXPECT_EQ(c.turns[1].decode.duration_seconds, 2);
  EXPECT_EQ(c.turns[2].role, Role::kAssistant);
  EXPECT_TRUE(c.turns[2].audio_path.empty());
}

TEST(ConversationLineTest, NemoMultiTurnSpelling) {
  const ConversationLine c = Parse(
      R"({"id": "n1", "conversations": [{"from": "User", "type": "audio", "value": "x.flac",)"
      R"( "duration": 1.25, "text": null}, {"from": "Assistant", "type": "text", "value": "hi"}],)"
      R"( "custom": {"lang": "en"}})");
  ASSERT_EQ(c.turns.size(), 2u);
  EXPECT_EQ(c.turns[0].audio_path, "x.flac");
  EXPECT_TRUE(c.turns[0].text.empty());
  EXPECT_EQ(c.turns[0].decode.duration_seconds, 1.25);
  EXPECT_EQ(c.turns[1].role, Role::kAssistant);
  EXPECT_EQ(c.turns[1].text, "hi");
}

TEST(ConversationLineTest, ShareGptRolesAndValueAndContent) {
  const ConversationLine c = Parse(
      R"({"conversations": [{"from": "system", "value": "s"}, {"from": "human", "value": "q"},)"
      R"( {"role": "gpt", "content": "a"}]})");
  EXPECT_EQ(c.key, "f.jsonl:7");  // no id: file and line
  ASSERT_EQ(c.turns.size(), 3u);
  EXPECT_EQ(c.turns[0].role, Role::kSystem);
  EXPECT_EQ(c.turns[1].role, Role::kUser);
  EXPECT_EQ(c.turns[1].text, "q");
  EXPECT_EQ(c.turns[2].role, Role::kAssistant);
  EXPECT_EQ(c.turns[2].text, "a");
}

TEST(ConversationLineTest, EachRejectionSaysWhyAndNamesTheTurn) {
  EXPECT_EQ(Reason("  "), "empty line");
  EXPECT_EQ(Reason("\xff{}"), "invalid UTF-8 at byte 0 of the line");
  EXPECT_NE(Reason(R"({"turns": [)").find("invalid JSON"), std::string::npos);
  EXPECT_EQ(Reason("[]"), "not a JSON object");
  EXPECT_EQ(Reason(R"({"id": "x"})"),
            "missing \"turns\" (or NeMo's \"conversations\"): a list of turns");
  EXPECT_EQ(Reason(R"({"turns": []})"), "empty conversation: no turns");
  EXPECT_EQ(Reason(R"({"turns": [], "conversations": []})"),
            "both \"turns\" and \"conversations\"");
  EXPECT_EQ(Reason(R"({"turns": [{"role": "user", "text": "a"}, {"role": "tool", "text": "b"}]})"),
            "turn 1: unknown role \"tool\" (accepted: system, user, assistant; human, gpt; any "
            "case)");
  EXPECT_EQ(Reason(R"({"turns": [{"text": "a"}]})"),
            "turn 0: needs exactly one of \"role\" and \"from\"");
  EXPECT_EQ(Reason(R"({"turns": [{"role": "user"}]})"), "turn 0: neither text nor audio");
  EXPECT_EQ(Reason(R"({"turns": [{"role": "user", "text": 3}]})"),
            "turn 0: \"text\" must be a string");
  EXPECT_EQ(Reason(R"({"turns": [{"role": "user", "audio": "a.wav"}]})"),
            "turn 0: \"audio\" must be an object {\"path\", \"offset\", \"duration\"}");
  EXPECT_EQ(Reason(R"({"turns": [{"role": "user", "audio": {"path": "a.wav", "offset": -1}}]})"),
            "turn 0: \"audio\": \"offset\" must be a non-negative number of seconds");
  EXPECT_EQ(
      Reason(R"({"turns": [{"from": "user", "type": "audio", "value": "a.wav", "text": "t"}]})")
          .substr(0, 40),
      "turn 0: an audio turn's \"text\" (its tran");
  EXPECT_EQ(Reason(R"({"turns": [{"from": "user", "type": "video", "value": "v"}]})"),
            "turn 0: \"type\" \"video\" is neither \"text\" nor \"audio\"");
  EXPECT_EQ(Reason(R"({"id": 3, "turns": [{"role": "user", "text": "a"}]})"),
            "\"id\" must be a non-empty string");
  EXPECT_EQ(Reason(R"({"system": "s", "turns": [{"role": "system", "text": "a"}]})"),
            "turn 0: a system turn and a \"system\" prompt; give one of them");
  EXPECT_EQ(Reason(R"({"id": ")" + std::string(5000, 'k') +
                   R"(", "turns": [{"role": "user", "text": "a"}]})"),
            "key longer than 4096 bytes");
}

}  // namespace
}  // namespace sluice::shardify
