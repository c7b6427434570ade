// shardify conversations end to end, on WAVs and JSONL lines the test writes: records decode to
// the input's turns with the WAVs' samples, every rejection reason lands in rejects.jsonl with
// file and line, the shards are byte-identical for -j 1 and -j 2, and the index holds each
// turn's lengths (docs/conversations.md).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "assert_ok.h"
#include "dataset_compare.h"
#include "features/flac.h"
#include "loader/digest.h"
#include "loader/loader.h"
#include "shards/conversation.h"
#include "shards/dataset.h"
#include "shards/fields.h"
#include "shards/record.h"
#include "test_util.h"

namespace sluice {
namespace {

using nlohmann::json;
using testing::TempDir;

std::string Shardify() {
  const char* p = std::getenv("SHARDIFY");
  return p ? p : "build/tools/shardify";
}

// A 16-bit mono WAV at 16 kHz (the dataset's rate: no resampling, so the stored samples are
// exactly these).
std::vector<int16_t> WriteWav(const std::string& path, size_t n, uint32_t seed) {
  std::vector<int16_t> s(n);
  std::mt19937 rng(seed);
  for (auto& v : s) v = static_cast<int16_t>(static_cast<int>(rng() % 20000) - 10000);
  auto u32 = [](uint32_t v) { return std::string(reinterpret_cast<const char*>(&v), 4); };
  auto u16 = [](uint16_t v) { return std::string(reinterpret_cast<const char*>(&v), 2); };
  const uint32_t bytes = static_cast<uint32_t>(n * 2);
  std::string w = "RIFF" + u32(36 + bytes) + "WAVEfmt " + u32(16) + u16(1) + u16(1) + u32(16000) +
                  u32(32000) + u16(2) + u16(16) + "data" + u32(bytes);
  w.append(reinterpret_cast<const char*>(s.data()), bytes);
  testing::WriteFile(path, w);
  return s;
}

struct Turn {
  shards::Role role;
  std::string text;
  std::vector<int16_t> audio;
};

class ShardifyConversationsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    a_ = WriteWav(tmp_.Join("a.wav"), 8000, 1);
    b_ = WriteWav(tmp_.Join("b.wav"), 12345, 2);
    long_ = WriteWav(tmp_.Join("long.wav"), 16000 * 3, 3);
    testing::WriteFile(tmp_.Join("bad.wav"), "RIFF not really a wav file");
  }

  testing::ShellResult Run(const std::string& manifest, const std::string& out,
                           const std::string& extra = "") {
    return testing::RunShell(Shardify() + " conversations -q " + tmp_.Join(manifest) + " -o " +
                             tmp_.Join(out) + " --max-duration 2 " + extra + " 2>&1");
  }

  TempDir tmp_;
  std::vector<int16_t> a_, b_, long_;
};

TEST_F(ShardifyConversationsTest, RecordsDecodeToTheInputTurnsWithTheirSamples) {
  // Our spelling with a system prompt and a segment; NeMo's; a turn with text and audio.
  testing::WriteFile(
      tmp_.Join("c.jsonl"),
      R"({"id": "c1", "system": "be brief", "turns": [{"role": "user", "text": "what is said?", "audio": {"path": "a.wav"}}, {"role": "assistant", "text": "hello"}]})"
      "\n"
      R"({"id": "c2", "conversations": [{"from": "User", "type": "audio", "value": "b.wav", "offset": 0.25}, {"from": "Assistant", "type": "text", "value": "yes"}, {"from": "User", "type": "audio", "value": "a.wav"}, {"from": "Assistant", "type": "text", "value": "again"}]})"
      "\n");
  const std::vector<std::vector<Turn>> want = {
      {{shards::Role::kSystem, "be brief", {}},
       {shards::Role::kUser, "what is said?", a_},
       {shards::Role::kAssistant, "hello", {}}},
      {{shards::Role::kUser, "", std::vector<int16_t>(b_.begin() + 4000, b_.end())},
       {shards::Role::kAssistant, "yes", {}},
       {shards::Role::kUser, "", a_},
       {shards::Role::kAssistant, "again", {}}}};
  auto r = Run("c.jsonl", "ds", "--tokenizer char");
  ASSERT_EQ(r.code, 0) << r.out;
  std::unique_ptr<shards::Dataset> ds;
  ASSERT_OK(shards::Dataset::Open(tmp_.Join("ds"), {}, &ds));
  EXPECT_EQ(ds->manifest().kind, "conversation");
  ASSERT_EQ(ds->num_records(), 2u);
  const shards::ShardReader& sh = ds->shard(0);
  for (size_t i = 0; i < 2; ++i) {
    SCOPED_TRACE("record " + std::to_string(i));
    std::string payload;
    ASSERT_OK(sh.ReadRecord(i, &payload));
    shards::RecordView v;
    ASSERT_OK(shards::ParseRecord(payload.data(), payload.size(), "r", &v));
    std::vector<shards::ConversationTurn> turns;
    ASSERT_OK(shards::DecodeConversation(v, "r", &turns));
    const shards::FieldView* audio = v.Find(shards::FieldType::kAudioPcm16);
    ASSERT_NE(audio, nullptr);
    const auto* pcm = reinterpret_cast<const int16_t*>(audio->data);
    ASSERT_EQ(turns.size(), want[i].size());
    uint64_t samples = 0, tokens = 0;
    for (size_t t = 0; t < turns.size(); ++t) {
      SCOPED_TRACE("turn " + std::to_string(t));
      EXPECT_EQ(turns[t].entry.role, want[i][t].role);
      EXPECT_EQ(turns[t].text, want[i][t].text);
      EXPECT_EQ(turns[t].entry.has_audio, !want[i][t].audio.empty());
      EXPECT_EQ(std::vector<int16_t>(pcm + turns[t].first_sample,
                                     pcm + turns[t].first_sample + turns[t].entry.samples),
                want[i][t].audio);
      // char ids: one per character of the normalised text.
      EXPECT_EQ(turns[t].tokens.size(), turns[t].entry.tokens);
      EXPECT_EQ(turns[t].entry.tokens > 0, !want[i][t].text.empty());
      samples += turns[t].entry.samples;
      tokens += turns[t].entry.tokens;
    }
    EXPECT_EQ(samples * 2, audio->size);
    // The index: totals in the record entry, the turn table in the aux area.
    EXPECT_EQ(sh.record(i).duration, samples);
    EXPECT_EQ(sh.record(i).tokens, tokens);
    EXPECT_EQ(sh.aux(i), v.Find(shards::FieldType::kTurns)->bytes());
  }
}

TEST_F(ShardifyConversationsTest, FlacRecordsHoldTheSamplesOfPcm16Ones) {
  testing::WriteFile(
      tmp_.Join("c.jsonl"),
      R"({"turns": [{"role": "user", "audio": {"path": "a.wav"}}, {"role": "assistant", "text": "x"}, {"role": "user", "audio": {"path": "b.wav"}}]})"
      "\n"
      R"({"turns": [{"role": "user", "text": "no audio"}]})"
      "\n");
  ASSERT_EQ(Run("c.jsonl", "pcm").code, 0);
  ASSERT_EQ(Run("c.jsonl", "flac", "--codec flac").code, 0);
  std::unique_ptr<shards::Dataset> pcm, flac;
  ASSERT_OK(shards::Dataset::Open(tmp_.Join("pcm"), {}, &pcm));
  ASSERT_OK(shards::Dataset::Open(tmp_.Join("flac"), {}, &flac));
  for (size_t i = 0; i < 2; ++i) {
    std::string a, b;
    ASSERT_OK(pcm->shard(0).ReadRecord(i, &a));
    ASSERT_OK(flac->shard(0).ReadRecord(i, &b));
    shards::RecordView va, vb;
    ASSERT_OK(shards::ParseRecord(a.data(), a.size(), "pcm", &va));
    ASSERT_OK(shards::ParseRecord(b.data(), b.size(), "flac", &vb));
    const shards::FieldView* samples = va.Find(shards::FieldType::kAudioPcm16);
    const shards::FieldView* encoded = vb.Find(shards::FieldType::kAudioFlac);
    ASSERT_TRUE(samples && encoded);
    std::vector<int16_t> decoded;
    if (encoded->size > 0) {
      int rate = 0;
      ASSERT_OK(features::DecodeFlac(reinterpret_cast<const uint8_t*>(encoded->data), encoded->size,
                                     "flac", &decoded, &rate));
      EXPECT_EQ(rate, 16000);
    }
    const auto* p = reinterpret_cast<const int16_t*>(samples->data);
    EXPECT_EQ(decoded, std::vector<int16_t>(p, p + samples->size / 2)) << "record " << i;
    EXPECT_EQ(pcm->shard(0).aux(i), flac->shard(0).aux(i));
  }
}

// The loader's FLAC path (loader/conversation_audio.cc decodes kAudioFlac per record): FLAC is
// lossless, so a --codec flac dataset gives the batches of its PCM16 twin, audio arrays
// included (BatchDigest covers features, lengths and spans), as samples and as fbank features.
TEST_F(ShardifyConversationsTest, FlacDatasetLoadsToTheBatchesOfItsPcm16Twin) {
  // 12 conversations: audio with and without an offset, a second audio turn in some.
  std::string lines;
  for (int i = 0; i < 12; ++i) {
    json turns = json::array();
    turns.push_back(
        {{"role", "user"},
         {"text", "say " + std::string(1 + i % 5, 'a')},
         {"audio", {{"path", i % 3 == 2 ? "b.wav" : "a.wav"}, {"offset", 0.05 * (i % 4)}}}});
    turns.push_back({{"role", "assistant"}, {"text", "done " + std::to_string(i)}});
    if (i % 4 == 1) turns.push_back({{"role", "user"}, {"audio", {{"path", "b.wav"}}}});
    lines += json{{"id", "c" + std::to_string(i)}, {"turns", turns}}.dump() + "\n";
  }
  testing::WriteFile(tmp_.Join("c.jsonl"), lines);
  // Small shards: several files, so the plan's shard boundaries are exercised for both codecs.
  const std::string opts = "--tokenizer char --shard-size 64k";
  ASSERT_EQ(Run("c.jsonl", "pcm", opts).code, 0);
  ASSERT_EQ(Run("c.jsonl", "flac", opts + " --codec flac").code, 0);
  testing::WriteFile(tmp_.Join("t.json"),
                     R"({"roles": {"user": {"prefix": {"ids": [1]}, "audio_prefix": {"ids": [2]}},
                                   "assistant": {"prefix": {"ids": [3]}, "suffix": {"ids": [4]}}},
                         "placeholder": {"ids": [5]}})");
  for (loader::FeatureKind kind : {loader::FeatureKind::kRaw, loader::FeatureKind::kFbank}) {
    loader::LoaderOptions o;
    o.threads = 2;
    o.seed = 3;
    o.kind = kind;
    o.packing.seq_len = 400;
    o.packing.batch_size = 2;
    o.packing.pack_mode = loader::PackMode::kBestFit;
    o.packing.split_long = false;
    o.packing.too_long = loader::TooLong::kSkip;
    o.conversation.chat_template = tmp_.Join("t.json");
    o.conversation.encoder_frames = "fastconformer";
    std::string digest[2];
    uint64_t audio[2] = {0, 0}, batches[2] = {0, 0};
    for (int d = 0; d < 2; ++d) {
      std::unique_ptr<loader::Loader> l;
      ASSERT_OK(loader::Loader::Open(tmp_.Join(d ? "flac" : "pcm"), o, &l));
      ASSERT_OK(l->Start(0));
      loader::BatchDigest sum;
      const loader::Batch* b;
      Status s;
      while ((s = l->Next(&b)).ok() && b != nullptr) {
        sum.Add(*b);
        audio[d] += b->num_audio();
        ++batches[d];
      }
      ASSERT_OK(s);
      digest[d] = sum.hex();
    }
    EXPECT_GE(audio[0], 15u) << "every conversation's audio turns, in every batch";
    EXPECT_EQ(batches[1], batches[0]);
    EXPECT_EQ(audio[1], audio[0]);
    EXPECT_EQ(digest[1], digest[0]) << loader::FeatureKindName(kind);
  }
}

// sluice-bench epoch on a conversation dataset reports what a speech-LLM's loader costs:
// conversations and LLM tokens per second and per core-second, and the audio it handed out.
TEST_F(ShardifyConversationsTest, BenchEpochReportsConversationsAndTokensPerCore) {
  const char* bench = std::getenv("SLUICE_BENCH");
  if (bench == nullptr) GTEST_SKIP() << "$SLUICE_BENCH is not set (meson test sets it)";
  std::string lines;
  for (int i = 0; i < 9; ++i)
    lines += json{{"id", "c" + std::to_string(i)},
                  {"turns",
                   {{{"role", "user"}, {"audio", {{"path", i % 2 ? "a.wav" : "b.wav"}}}},
                    {{"role", "assistant"}, {"text", "done " + std::to_string(i)}}}}}
                 .dump() +
             "\n";
  testing::WriteFile(tmp_.Join("c.jsonl"), lines);
  ASSERT_EQ(Run("c.jsonl", "ds", "--tokenizer char").code, 0);
  testing::WriteFile(tmp_.Join("t.json"),
                     R"({"roles": {"user": {"prefix": {"ids": [1]}},
                                   "assistant": {"prefix": {"ids": [3]}, "suffix": {"ids": [4]}}},
                         "placeholder": {"ids": [5]}})");
  // Batches of one row: no row repeats to fill a last batch, so each conversation counts once.
  auto r = testing::RunShell(std::string(bench) + " epoch " + tmp_.Join("ds") +
                             " --json --threads 1 --seq-len 200 --batch-size 1 --pack-mode "
                             "best_fit --split-long false --too-long skip --chat-template " +
                             tmp_.Join("t.json") + " --encoder-frames fastconformer");
  ASSERT_EQ(r.code, 0) << r.out;
  json j;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] == '{') j = json::parse(line);
  ASSERT_TRUE(j.contains("documents")) << r.out;
  EXPECT_EQ(j["documents"], 9);
  EXPECT_GT(j["documents_per_second"].get<double>(), 0);
  EXPECT_GT(j["documents_per_core_second"].get<double>(), 0);
  EXPECT_GT(j["tokens_per_core_second"].get<double>(), 0);
  // The audio turns handed out: 5 of b.wav and 4 of a.wav.
  EXPECT_DOUBLE_EQ(j["audio_seconds"].get<double>(), (5 * 12345 + 4 * 8000) / 16000.0);
}

TEST_F(ShardifyConversationsTest, EachBadLineIsRejectedWithFileLineAndReason) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"id": "ok", "turns": [{"role": "user", "audio": {"path": "a.wav"}}, {"role": "assistant", "text": "x"}]})",
       ""},
      {R"({"id": "missing", "turns": [{"role": "user", "audio": {"path": "nope.wav"}}]})",
       "turn 0: " + tmp_.Join("nope.wav") + ": cannot open"},
      {R"({"id": "undecodable", "turns": [{"role": "user", "text": "t"}, {"role": "user", "audio": {"path": "bad.wav"}}]})",
       "turn 1: " + tmp_.Join("bad.wav") + ": not a readable audio file"},
      // Turns are numbered as the line lists them: the system prompt is not one of them.
      {R"({"id": "sys", "system": "s", "turns": [{"role": "user", "audio": {"path": "gone.wav"}}]})",
       "turn 0: " + tmp_.Join("gone.wav") + ": cannot open"},
      {R"({"id": "empty", "turns": []})", "empty conversation: no turns"},
      {R"({"id": "role", "turns": [{"role": "narrator", "text": "t"}]})",
       "turn 0: unknown role \"narrator\""},
      {R"({"id": "long", "turns": [{"role": "user", "audio": {"path": "long.wav"}}]})",
       "turn 0: " + tmp_.Join("long.wav") + ": 3.000 s of audio exceeds --max-duration 2"},
      {R"({"id": "json", "turns": [)", "invalid JSON"},
      {R"({"id": "ok", "turns": [{"role": "user", "text": "again"}]})",
       "duplicate key 'ok', already written as record 0 of shard-00000.sluice"},
  };
  std::string lines;
  for (const auto& c : cases) lines += c.first + "\n";
  testing::WriteFile(tmp_.Join("c.jsonl"), lines);
  auto r = Run("c.jsonl", "ds");
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream in(tmp_.Join("ds/rejects.jsonl"));
  std::vector<json> rejects;
  for (std::string l; std::getline(in, l);) rejects.push_back(json::parse(l));
  ASSERT_EQ(rejects.size(), cases.size() - 1);
  for (size_t i = 1; i < cases.size(); ++i) {
    const json& j = rejects[i - 1];
    EXPECT_EQ(j["line"], i + 1);
    EXPECT_EQ(j["source"], tmp_.Join("c.jsonl"));
    EXPECT_NE(j["reason"].get<std::string>().find(cases[i].second), std::string::npos)
        << j["reason"] << " lacks " << cases[i].second;
  }
}

TEST_F(ShardifyConversationsTest, NanDurationLimitsAreRefused) {
  // A NaN limit would reject nothing (every comparison with NaN is false).
  testing::WriteFile(tmp_.Join("c.jsonl"), R"({"turns": [{"role": "user", "text": "t"}]})"
                                           "\n");
  for (const char* opt : {"--min-duration nan", "--max-duration nan"}) {
    auto r = testing::RunShell(Shardify() + " conversations -q " + tmp_.Join("c.jsonl") + " -o " +
                               tmp_.Join("ds") + " " + opt);
    EXPECT_EQ(r.code, 2) << opt << ": " << r.out;
    EXPECT_NE(r.out.find("not nan"), std::string::npos) << r.out;
  }
}

TEST_F(ShardifyConversationsTest, PostProcessorTokensAroundEachTurnAreRefused) {
  // HF's add_special_tokens would put e.g. Llama 3's <|begin_of_text|> around every turn; in a
  // conversation the chat template places the special tokens, once.
  testing::WriteFile(tmp_.Join("c.jsonl"), R"({"turns": [{"role": "user", "text": "t"}]})"
                                           "\n");
  auto r = testing::RunShell(Shardify() + " conversations -q " + tmp_.Join("c.jsonl") + " -o " +
                             tmp_.Join("ds") + " --tokenizer char --add-special-tokens true");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("chat template"), std::string::npos) << r.out;
  r = testing::RunShell(Shardify() + " conversations -q " + tmp_.Join("c.jsonl") + " -o " +
                        tmp_.Join("ds") + " --tokenizer char");
  EXPECT_EQ(r.code, 0) << r.out;
}

TEST_F(ShardifyConversationsTest, ShardsAreByteIdenticalForOneOrTwoThreads) {
  std::string lines;
  for (int i = 0; i < 40; ++i)
    lines += R"({"turns": [{"role": "user", "text": "turn )" + std::to_string(i) +
             R"(", "audio": {"path": ")" + std::string(i % 2 ? "a" : "b") +
             R"(.wav"}}, {"role": "assistant", "text": "reply"}]})" + "\n";
  testing::WriteFile(tmp_.Join("c.jsonl"), lines);
  const std::string opts = "--shard-size 100KiB --block-size 16KiB";
  ASSERT_EQ(Run("c.jsonl", "j1", "-j 1 " + opts).code, 0);
  ASSERT_EQ(Run("c.jsonl", "j2", "-j 2 " + opts).code, 0);
  const auto a = testing::DirContents(tmp_.Join("j1"));
  EXPECT_GT(a.size(), 3u);  // several shards
  EXPECT_EQ(a, testing::DirContents(tmp_.Join("j2")));
}

TEST_F(ShardifyConversationsTest, InterruptedRunResumesToTheSameBytes) {
  std::string lines;
  for (int i = 0; i < 40; ++i)
    lines +=
        R"({"turns": [{"role": "user", "audio": {"path": "b.wav"}}, {"role": "assistant", "text": "r)" +
        std::to_string(i) + R"("}]})" + "\n";
  testing::WriteFile(tmp_.Join("c.jsonl"), lines);
  const std::string opts = "--shard-size 100KiB --block-size 16KiB";
  ASSERT_EQ(Run("c.jsonl", "full", opts).code, 0);
  // Killed before the first write of the third shard: two are durable, the third begun.
  auto crash = testing::RunShell("SLUICE_FAULT_INJECT=2:kill:shard-00002.sluice.tmp " + Shardify() +
                                 " conversations -q " + tmp_.Join("c.jsonl") + " -o " +
                                 tmp_.Join("ds") + " --max-duration 2 " + opts);
  ASSERT_NE(crash.code, 0) << crash.out;
  ASSERT_TRUE(std::filesystem::exists(tmp_.Join("ds/shard-00001.sluice")));
  ASSERT_FALSE(std::filesystem::exists(tmp_.Join("ds/manifest.json")));
  auto resumed = Run("c.jsonl", "ds", "--resume --json " + opts);
  ASSERT_EQ(resumed.code, 0) << resumed.out;
  EXPECT_TRUE(json::parse(resumed.out)["resumed"].get<bool>()) << resumed.out;
  EXPECT_EQ(testing::DirContents(tmp_.Join("full")), testing::DirContents(tmp_.Join("ds")));
}

TEST_F(ShardifyConversationsTest, PartsRepackedByMergeEqualOneRunWithTheirTurnTables) {
  std::string lines;
  for (int i = 0; i < 10; ++i)
    lines +=
        R"({"turns": [{"role": "user", "audio": {"path": "a.wav"}}, {"role": "assistant", "text": "r)" +
        std::to_string(i) + R"("}]})" + "\n";
  testing::WriteFile(tmp_.Join("c.jsonl"), lines);
  ASSERT_EQ(Run("c.jsonl", "one").code, 0);
  ASSERT_EQ(Run("c.jsonl", "p0", "--part 0/2").code, 0);
  ASSERT_EQ(Run("c.jsonl", "p1", "--part 1/2").code, 0);
  auto r = testing::RunShell(Shardify() + " merge --repack " + tmp_.Join("p0") + " " +
                             tmp_.Join("p1") + " -o " + tmp_.Join("merged"));
  ASSERT_EQ(r.code, 0) << r.out;
  // --repack rewrites every record: the index's turn tables must come along.
  EXPECT_TRUE(testing::ReadFile(tmp_.Join("merged/shard-00000.sluice")) ==
              testing::ReadFile(tmp_.Join("one/shard-00000.sluice")))
      << "the repacked shard differs from one run's";
  std::unique_ptr<shards::Dataset> ds;
  ASSERT_OK(shards::Dataset::Open(tmp_.Join("merged"), {}, &ds));
  ASSERT_TRUE(ds->shard(0).has_aux());
  EXPECT_EQ(ds->shard(0).num_records(), 10u);
}

}  // namespace
}  // namespace sluice
