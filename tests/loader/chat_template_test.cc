// Templates (loader/chat_template.h): what a file may say, the checksum that tells two templates
// apart, and rendering on a hand-made conversation. The equality with an independent Python
// rendering over HF tokenizers' ids is tests/tools/conversation_render_test.py.
#include "loader/chat_template.h"

#include <gtest/gtest.h>

#include "assert_ok.h"
#include "features/text_normalize.h"
#include "template_chars.h"

namespace sluice::loader {
namespace {

using shards::ConversationTurn;
using shards::Role;

std::unique_ptr<features::Tokenizer> Chars() { return testing::TemplateChars(); }

Status Parse(const std::string& text, ChatTemplate* t) {
  return ParseChatTemplate(text, "t.json", t);
}

TEST(ChatTemplate, ErrorsNameTheFileAndTheJsonPath) {
  ChatTemplate t;
  auto says = [&](const std::string& text, const std::string& what) {
    Status st = Parse(text, &t);
    EXPECT_TRUE(st.IsInvalidArgument()) << text;
    EXPECT_NE(st.message().find("t.json: " + what), std::string::npos) << st.message();
  };
  says("[1]", "$: not a JSON object");
  says(R"({"placeholder": "x", "colour": 1})", "$.colour: unknown key");
  says(R"({"placeholder": "x", "roles": {"tool": {}}})", "$.roles.tool: unknown role");
  says(R"({"placeholder": "x", "roles": {"user": {"prefx": "a"}}})",
       "$.roles.user.prefx: unknown key");
  says(R"({"placeholder": "x", "roles": {"user": {"loss": "yes"}}})",
       "$.roles.user.loss: expected true or false");
  says(R"({"placeholder": "x", "roles": {"user": {"prefix": 3}}})",
       "$.roles.user.prefix: expected a string or {\"ids\": [...]}");
  says(R"({"placeholder": {"ids": [-1]}})", "$.placeholder.ids: ids are integers");
  says(R"({"placeholder": "x", "roles": {"user": {"audio_position": "middle"}}})",
       "$.roles.user.audio_position: expected \"before_text\" or \"after_text\"");
}

TEST(ChatTemplate, ChecksumIsTheMeaningNotTheSpelling) {
  ChatTemplate a, b, c;
  ASSERT_OK(Parse(R"({"placeholder": "x", "roles": {"user": {"prefix": "u"}}})", &a));
  // The same template: keys reordered, defaults spelt out.
  ASSERT_OK(
      Parse(R"({"roles": {"assistant": {"loss": true}, "user": {"loss": false, "prefix": "u"}},
                      "placeholder": "x"})",
            &b));
  ASSERT_OK(Parse(R"({"placeholder": "x", "roles": {"user": {"prefix": "u", "loss": true}}})", &c));
  EXPECT_EQ(a.checksum, b.checksum);
  EXPECT_EQ(a.canonical, b.canonical);
  EXPECT_NE(a.checksum, c.checksum);
}

TEST(ChatTemplate, PlaceholderMustBeOneId) {
  auto tok = Chars();
  ChatTemplate t;
  ASSERT_OK(Parse(R"({"placeholder": "ab"})", &t));
  Status st = ResolveChatTemplate(*tok, &t);
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_NE(st.message().find("is 2 ids, not one"), std::string::npos) << st.message();
}

TEST(ChatTemplate, RendersPrefixAudioTextSuffixWithLossOnAssistantOnly) {
  auto tok = Chars();
  ChatTemplate t;
  ASSERT_OK(Parse(R"({"placeholder": {"ids": [99]},
                      "roles": {"user": {"prefix": "u", "suffix": "|", "audio_prefix": "<",
                                         "audio_suffix": ">"},
                                "assistant": {"prefix": "a", "suffix": {"ids": [1]}}}})",
                  &t));
  ASSERT_OK(ResolveChatTemplate(*tok, &t));
  const uint32_t user_ids[] = {20}, bot_ids[] = {30, 31};
  std::vector<ConversationTurn> turns(2);
  turns[0].entry = {Role::kUser, true, 1, 1, 1000};
  turns[0].tokens = user_ids;
  turns[1].entry = {Role::kAssistant, false, 2, 2, 0};
  turns[1].tokens = bot_ids;
  for (auto& turn : turns) turn.ids_stored = true;
  RenderedConversation out;
  ASSERT_OK(RenderConversation(
      t, turns, [](uint64_t s) { return s / 400; }, &out));
  // u < 99 99 > 20 | a 30 31 1: the ids of "u" "<" ">" "|" "a" are 22, 29, 30, 31, 2.
  EXPECT_EQ(out.ids, (std::vector<int32_t>{22, 29, 99, 99, 30, 20, 31, 2, 30, 31, 1}));
  EXPECT_EQ(out.loss, (std::vector<uint8_t>{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1}));
  ASSERT_EQ(out.spans.size(), 1u);
  EXPECT_EQ(out.spans[0].turn, 0u);
  EXPECT_EQ(out.spans[0].start, 2u);
  EXPECT_EQ(out.spans[0].length, 2u);
}

TEST(ChatTemplate, TextWithoutIdsIsRefusedWithTheHint) {
  auto tok = Chars();
  ChatTemplate t;
  ASSERT_OK(Parse(R"({"placeholder": {"ids": [99]}})", &t));
  ASSERT_OK(ResolveChatTemplate(*tok, &t));
  std::vector<ConversationTurn> turns(1);
  turns[0].entry = {Role::kUser, false, 5, 0, 0};
  RenderedConversation out;
  Status st = RenderConversation(
      t, turns, [](uint64_t) { return 0; }, &out);
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_NE(st.message().find("--tokenizer"), std::string::npos) << st.message();
}

// Text-only conversations need no placeholder; a template without one renders text turns and
// refuses an audio turn (there is nothing to fill its span with), and is another template than
// one with a placeholder.
TEST(ChatTemplate, APlaceholderIsNeededOnlyForAudioTurns) {
  auto tok = Chars();
  ChatTemplate t, with;
  ASSERT_OK(Parse(R"({"roles": {"assistant": {"prefix": "<"}}})", &t));
  EXPECT_FALSE(t.has_placeholder);
  ASSERT_OK(ResolveChatTemplate(*tok, &t));
  ASSERT_OK(Parse(R"({"placeholder": "|", "roles": {"assistant": {"prefix": "<"}}})", &with));
  EXPECT_TRUE(with.has_placeholder);
  EXPECT_NE(t.checksum, with.checksum);
  std::vector<ConversationTurn> turns(1);
  turns[0].entry = {Role::kAssistant, false, 1, 1, 0};
  const uint32_t ids[] = {5};
  turns[0].tokens = ids;
  turns[0].ids_stored = true;
  RenderedConversation out;
  ASSERT_OK(RenderConversation(
      t, turns, [](uint64_t) { return 3; }, &out));
  EXPECT_EQ(out.ids, (std::vector<int32_t>{29, 5}));
  EXPECT_EQ(out.loss, (std::vector<uint8_t>{0, 1}));
  turns[0].entry.has_audio = true;
  turns[0].entry.samples = 100;
  const Status st = RenderConversation(
      t, turns, [](uint64_t) { return 3; }, &out);
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_NE(st.message().find("no placeholder"), std::string::npos) << st.message();
}

TEST(ChatTemplate, AnIdNoInt32BatchCanHoldIsRefusedNotWrapped) {
  // Ids are u32 on disk; 2^31 would become a negative id in the batch.
  auto tok = Chars();
  ChatTemplate t;
  ASSERT_OK(Parse(R"({"placeholder": {"ids": [99]}})", &t));
  ASSERT_OK(ResolveChatTemplate(*tok, &t));
  const std::vector<uint32_t> ids = {5, 0x80000000u};
  std::vector<ConversationTurn> turns(1);
  turns[0].entry = {Role::kUser, false, 2, 2, 0};
  turns[0].tokens = ids;
  turns[0].ids_stored = true;
  RenderedConversation out;
  Status st = RenderConversation(
      t, turns, [](uint64_t) { return 0; }, &out);
  EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
  EXPECT_NE(st.message().find("2147483648"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace sluice::loader
