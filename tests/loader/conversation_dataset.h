// The conversation dataset of the loader's conversation tests (conversation_loader_test.cc,
// conversation_audio_test.cc): 40 conversations written as shardify conversations --tokenizer
// char would, the template, and each conversation rendered from the turns as written (never
// read back from the dataset).
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "assert_ok.h"
#include "features/encoder_frames.h"
#include "features/text_normalize.h"
#include "loader/chat_template.h"
#include "loader/dataset_tokenizer.h"
#include "shards/conversation.h"
#include "shards/dataset_writer.h"
#include "shards/manifest.h"
#include "shards/record.h"
#include "template_chars.h"

namespace sluice::loader::conversation_testing {

using shards::Role;
using shards::TurnEntry;

constexpr int kRecords = 40;
constexpr int kLong = 13;  // its assistant answer is longer than any row
constexpr uint32_t kSeqLen = 200;

inline std::vector<std::string> Vocabulary() { return testing::TemplateVocabulary(); }

inline std::unique_ptr<features::Tokenizer> Chars(features::TextNormalizeOptions* norm) {
  *norm = testing::TemplateNormalize();
  return testing::TemplateChars();
}

// One turn as written: its entry, text and samples.
struct Turn {
  TurnEntry entry;
  std::string text;
  std::vector<int16_t> samples;
};

inline std::string Letters(int n, int salt) {
  std::string s;
  for (int k = 0; k < n; ++k) s += static_cast<char>('a' + (salt * 7 + k * 3) % 26);
  return s;
}

// Conversation i: sometimes a system prompt; a user turn of audio, or audio and text; an
// answer; every fourth one a second exchange, of text, or of audio and text every eighth.
// `text_only`: the user speaks in text alone (instruction data), never audio.
inline std::vector<Turn> Conversation(int i, bool text_only) {
  std::vector<Turn> turns;
  auto text = [&](Role r, int n) {
    Turn t;
    t.entry.role = r;
    t.text = Letters(n, i + static_cast<int>(turns.size()));
    turns.push_back(t);
  };
  if (i % 3 == 0) text(Role::kSystem, 4 + i % 5);
  Turn u;
  u.entry.role = Role::kUser;
  u.entry.has_audio = !text_only;
  const int samples = text_only ? 0 : 1600 + (i * 977) % 14400;
  for (int k = 0; k < samples; ++k)
    u.samples.push_back(static_cast<int16_t>((i * 131 + k * 7) % 2000 - 1000));
  if (i % 2 || text_only) u.text = Letters(3 + i % 11, i);
  turns.push_back(u);
  text(Role::kAssistant, i == kLong ? 400 : 5 + (i * 5) % 30);
  if (i % 4 == 1) {
    text(Role::kUser, 6);
    // Every eighth one speaks again: two audio spans in one conversation.
    if (i % 8 == 1 && !text_only) {
      Turn& again = turns.back();
      again.entry.has_audio = true;
      for (int k = 0; k < 2400 + i * 37; ++k)
        again.samples.push_back(static_cast<int16_t>((i * 53 + k * 11) % 3000 - 1500));
    }
    text(Role::kAssistant, 9);
  }
  return turns;
}

inline std::string Key(int i) { return "conv-" + std::to_string(1000 + i); }

// Writes the dataset as shardify conversations --tokenizer char would (small blocks: several
// blocks and shards), with its tokenizer in the manifest, and the template file.
inline void WriteConversations(const std::string& dir, bool text_only) {
  features::TextNormalizeOptions norm;
  auto tok = Chars(&norm);
  shards::DatasetWriterOptions opt;
  opt.shard_size = 200000;  // about 6 shards of 2 to 4 blocks
  opt.shard.block_size = 60000;
  std::filesystem::create_directories(dir);
  shards::DatasetWriter w(dir, opt);
  uint64_t tokens = 0, duration = 0;
  for (int i = 0; i < kRecords; ++i) {
    std::vector<Turn> turns = Conversation(i, text_only);
    std::vector<TurnEntry> entries;
    std::string text;
    std::vector<int32_t> ids;
    std::vector<int16_t> pcm;
    for (Turn& t : turns) {
      std::vector<int32_t> turn_ids;
      if (!t.text.empty()) {
        EXPECT_OK(tok->Encode(t.text, &turn_ids));
      }
      t.entry.text_bytes = static_cast<uint32_t>(t.text.size());
      t.entry.tokens = static_cast<uint32_t>(turn_ids.size());
      t.entry.samples = static_cast<uint32_t>(t.samples.size());
      entries.push_back(t.entry);
      text += t.text;
      ids.insert(ids.end(), turn_ids.begin(), turn_ids.end());
      pcm.insert(pcm.end(), t.samples.begin(), t.samples.end());
    }
    std::string table;
    shards::EncodeTurnTable(entries, &table);
    shards::RecordBuilder rb;
    rb.AddField(shards::FieldType::kTurns, table);
    rb.AddField(shards::FieldType::kText, text);
    rb.AddField(shards::FieldType::kTokens, ids.data(), ids.size() * sizeof(int32_t));
    rb.AddField(shards::FieldType::kAudioPcm16, pcm.data(), pcm.size() * sizeof(int16_t));
    const std::string key = Key(i);
    EXPECT_OK(w.Add({key, pcm.size(), static_cast<uint32_t>(ids.size()), table}, rb.data()));
    tokens += ids.size();
    duration += pcm.size();
  }
  EXPECT_OK(w.Finish());
  shards::Manifest m;
  m.kind = "conversation";
  m.fields = {"turns", "text", "tokens", "audio"};
  m.sample_rate = 16000;
  m.codec = "pcm16";
  *m.tokenizer = nlohmann::json{{"type", "char"},
                                {"normalize", TextNormalizeToJson(norm)},
                                {"vocab", Vocabulary()},
                                {"vocab_size", tok->vocab_size()},
                                {"blank_id", features::kBlankId},
                                {"end_of_document_id", features::kEndOfDocumentId}};
  m.records = kRecords;
  m.tokens = tokens;
  m.shards = w.shards();
  EXPECT_OK(shards::SaveManifest(dir, m));
}

constexpr const char* kTemplate =
    R"({"roles": {"system": {"prefix": "<s>", "suffix": "|"},
                  "user": {"prefix": "<u>", "suffix": "|", "audio_prefix": "<a",
                           "audio_suffix": ">"},
                  "assistant": {"prefix": "<as>", "suffix": "||"}},
        "placeholder": {"ids": [77]}})";

// Instruction data's template: no audio pieces, no placeholder.
constexpr const char* kTextTemplate =
    R"({"roles": {"system": {"prefix": "<s>", "suffix": "|"},
                  "user": {"prefix": "<u>", "suffix": "|"},
                  "assistant": {"prefix": "<as>", "suffix": "||"}}})";

// Conversation i rendered from the turns as written (never read back from the dataset).
inline RenderedConversation Expected(int i, const char* tmpl = kTemplate, bool text_only = false) {
  features::TextNormalizeOptions norm;
  auto tok = Chars(&norm);
  ChatTemplate t;
  EXPECT_OK(ParseChatTemplate(tmpl, "t.json", &t));
  EXPECT_OK(ResolveChatTemplate(*tok, &t));
  features::EncoderFramesSpec spec;
  EXPECT_OK(features::EncoderFramesPreset("fastconformer", &spec));
  const std::vector<Turn> turns = Conversation(i, text_only);
  std::vector<std::vector<uint32_t>> ids(turns.size());
  std::vector<shards::ConversationTurn> in;
  for (size_t k = 0; k < turns.size(); ++k) {
    std::vector<int32_t> v;
    if (!turns[k].text.empty()) {
      EXPECT_OK(tok->Encode(turns[k].text, &v));
    }
    ids[k].assign(v.begin(), v.end());
    shards::ConversationTurn c;
    c.entry = turns[k].entry;
    c.entry.text_bytes = static_cast<uint32_t>(turns[k].text.size());
    c.entry.tokens = static_cast<uint32_t>(v.size());
    c.entry.samples = static_cast<uint32_t>(turns[k].samples.size());
    c.tokens = ids[k];
    c.ids_stored = true;
    in.push_back(c);
  }
  RenderedConversation r;
  EXPECT_OK(RenderConversation(
      t, in, [&](uint64_t n) { return static_cast<uint64_t>(features::EncoderFrames(spec, n)); },
      &r));
  return r;
}

}  // namespace sluice::loader::conversation_testing
