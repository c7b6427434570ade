// Conversation packing (loader/conversation_plan.h): a record's cost from its turn table alone
// equals the length of its rendering for every preset, the index's turn tables are read with no
// payload, and the epoch's rows hold every conversation once, within the budget, deterministically,
// with too-long ones skipped and counted, also across an elastic resume on another world.
#include "loader/conversation_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "assert_ok.h"
#include "base/random.h"
#include "features/text_normalize.h"
#include "loader/mix.h"
#include "loader/pack.h"
#include "loader/pack_fit.h"
#include "shards/shard_writer.h"
#include "synthetic_index.h"
#include "template_chars.h"
#include "test_util.h"

namespace sluice::loader {
namespace {

using shards::Role;
using shards::TurnEntry;

std::unique_ptr<features::Tokenizer> Chars() { return testing::TemplateChars(); }

ChatTemplate Template() {
  ChatTemplate t;
  EXPECT_OK(ParseChatTemplate(
      R"({"roles": {"system": {"prefix": "<s>", "suffix": "|"},
                    "user": {"prefix": "<u>", "suffix": "|", "audio_prefix": "<a",
                             "audio_suffix": ">", "audio_position": "after_text"},
                    "assistant": {"prefix": "<as>", "suffix": "||"}},
          "placeholder": {"ids": [40]}})",
      "t.json", &t));
  auto tok = Chars();
  EXPECT_OK(ResolveChatTemplate(*tok, &t));
  return t;
}

// A conversation drawn from `rng`: a system prompt sometimes, then user turns of text, audio or
// both and assistant turns of text.
std::vector<TurnEntry> RandomTurns(Rng& rng) {
  std::vector<TurnEntry> turns;
  if (rng.UniformInt(0, 1)) turns.push_back({Role::kSystem, false, 5, 3, 0});
  const int pairs = 1 + static_cast<int>(rng.UniformInt(0, 2));
  for (int p = 0; p < pairs; ++p) {
    TurnEntry u{Role::kUser, rng.UniformInt(0, 2) > 0, 0, 0, 0};
    if (u.has_audio) u.samples = static_cast<uint32_t>(rng.UniformInt(1, 16000 * 3));
    if (!u.has_audio || rng.UniformInt(0, 1)) {
      u.tokens = static_cast<uint32_t>(rng.UniformInt(1, 20));
      u.text_bytes = u.tokens;
    }
    turns.push_back(u);
    const uint32_t a = static_cast<uint32_t>(rng.UniformInt(1, 30));
    turns.push_back({Role::kAssistant, false, a, a, 0});
  }
  return turns;
}

// RenderConversation's input for `entries`: ids 2.. as the turns' stored ids.
std::vector<shards::ConversationTurn> AsTurns(const std::vector<TurnEntry>& entries,
                                              std::vector<uint32_t>* ids) {
  ids->assign(4096, 7);
  std::vector<shards::ConversationTurn> turns;
  for (const TurnEntry& e : entries) {
    shards::ConversationTurn t;
    t.entry = e;
    t.ids_stored = true;
    t.tokens = std::span<const uint32_t>(ids->data(), e.tokens);
    turns.push_back(t);
  }
  return turns;
}

TEST(ConversationPlan, CostIsTheRenderedLengthForEveryPreset) {
  const ChatTemplate t = Template();
  Rng rng(11);
  for (const std::string& preset : features::EncoderFramesPresetNames()) {
    features::EncoderFramesSpec spec;
    ASSERT_OK(features::EncoderFramesPreset(preset, &spec));
    for (int c = 0; c < 200; ++c) {
      const std::vector<TurnEntry> entries = RandomTurns(rng);
      std::vector<uint32_t> ids;
      const std::vector<shards::ConversationTurn> turns = AsTurns(entries, &ids);
      RenderedConversation r;
      ASSERT_OK(RenderConversation(
          t, turns,
          [&](uint64_t n) {
            return static_cast<uint64_t>(features::EncoderFrames(spec, static_cast<int64_t>(n)));
          },
          &r));
      uint64_t cost = 0;
      ASSERT_OK(ConversationTokens(t, spec, entries, true, "c", &cost));
      ASSERT_EQ(cost, r.ids.size()) << preset << " conversation " << c;
    }
  }
}

TEST(ConversationPlan, TextWithoutIdsIsRefusedWithTheHint) {
  features::EncoderFramesSpec spec;
  ASSERT_OK(features::EncoderFramesPreset("whisper", &spec));
  const std::vector<TurnEntry> turns = {{Role::kUser, false, 4, 0, 0}};
  uint64_t cost = 0;
  const Status st =
      ConversationTokens(Template(), spec, turns, false, "shard-00000: record 3", &cost);
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_NE(st.message().find("shard-00000: record 3: turn 0: text without token ids. HINT: "
                              "shardify conversations --tokenizer"),
            std::string::npos)
      << st.message();
}

// The payloads are not records at all: a cost that read one would fail to parse it.
TEST(ConversationPlan, IndexCostsComeFromTheAuxAreaAlone) {
  sluice::testing::TempDir dir;
  const ChatTemplate t = Template();
  features::EncoderFramesSpec spec;
  ASSERT_OK(features::EncoderFramesPreset("fastconformer", &spec));
  Rng rng(5);
  std::vector<uint64_t> want;
  std::unique_ptr<shards::ShardWriter> w;
  ASSERT_OK(shards::ShardWriter::Create(dir.Join("shard-00000.sluice"), {}, &w));
  for (int i = 0; i < 30; ++i) {
    const std::vector<TurnEntry> turns = RandomTurns(rng);
    std::string aux;
    shards::EncodeTurnTable(turns, &aux);
    const std::string key = "c" + std::to_string(i);
    ASSERT_OK(w->Add({key, shards::TotalSamples(turns), 0, aux}, "not a record"));
    uint64_t n = 0;
    ASSERT_OK(ConversationTokens(t, spec, turns, true, key, &n));
    want.push_back(n);
  }
  shards::ShardStats stats;
  ASSERT_OK(w->Finish(&stats));
  std::unique_ptr<shards::ShardReader> r;
  ASSERT_OK(shards::ShardReader::Open(dir.Join("shard-00000.sluice"), {}, &r));
  std::vector<uint64_t> got;
  ASSERT_OK(ConversationIndexTokens({r.get(), r.get()}, t, spec, true, &got));
  want.insert(want.end(), want.begin(), want.end());
  EXPECT_EQ(got, want);

  // A shard without turn tables (an audio or text dataset's) is named, with the fix.
  ASSERT_OK(shards::ShardWriter::Create(dir.Join("shard-00001.sluice"), {}, &w));
  ASSERT_OK(w->Add({"x", 0, 0, {}}, "text"));
  ASSERT_OK(w->Finish(&stats));
  ASSERT_OK(shards::ShardReader::Open(dir.Join("shard-00001.sluice"), {}, &r));
  const Status st = ConversationIndexTokens({r.get()}, t, spec, true, &got);
  EXPECT_TRUE(st.IsCorruption());
  EXPECT_NE(st.message().find("shard-00001.sluice: no turn tables in the index"), std::string::npos)
      << st.message();
}

TEST(ConversationPlan, PackingThatWouldCutAConversationIsRefused) {
  PackingOptions p;
  p.seq_len = 512;
  p.pack_mode = PackMode::kBestFit;
  p.split_long = false;
  p.too_long = TooLong::kSkip;
  EXPECT_OK(CheckConversationPacking(p));
  auto refused = [](PackingOptions q, const std::string& hint) {
    const Status st = CheckConversationPacking(q);
    EXPECT_TRUE(st.IsInvalidArgument());
    EXPECT_NE(st.message().find(hint), std::string::npos) << st.message();
  };
  PackingOptions q = p;
  q.seq_len = 0;
  refused(q, "HINT: --seq-len");
  q = p;
  q.pack_mode = PackMode::kConcat;
  refused(q, "HINT: --pack-mode best_fit");
  q = p;
  q.split_long = true;
  refused(q, "HINT: --split-long false");
  q = p;
  q.too_long = TooLong::kTruncate;
  refused(q, "HINT: --too-long skip");
}

struct Rows {
  std::map<uint64_t, int> once;  // record -> times in a row that is not a repeat
  uint64_t batches = 0;
};

// Walks a rank's plan: every row within the budget, pieces whole and side by side from column 0.
void Collect(const EpochPlan& plan, const std::vector<uint64_t>& cost, uint32_t L, uint32_t B,
             Rows* rows) {
  rows->batches += plan.batches.size();
  for (size_t j = 0; j < plan.batches.size(); ++j) {
    const PlannedBatch& pb = plan.batches[j];
    std::vector<uint32_t> used(B, 0);
    for (uint64_t e = pb.first; e < pb.first + pb.entries; ++e) {
      const uint32_t row = plan.entry_rows[e];
      const uint64_t rec = plan.records[e];
      const PackedPiece& piece = plan.pieces[e];
      EXPECT_EQ(piece.column, used[row]) << "batch " << j << " row " << row;
      EXPECT_EQ(piece.first, 0u) << "a conversation was split";
      EXPECT_EQ(piece.width, cost[rec]) << "record " << rec << " cut";
      used[row] += piece.width;
      if (plan.sequences[j * B + row] < plan.fit_rows) ++rows->once[rec];
    }
    for (uint32_t row = 0; row < B; ++row) EXPECT_LE(used[row], L);
  }
}

TEST(ConversationPlan, EveryConversationOnceWithinTheBudgetOnEveryRank) {
  IndexColumns index = loader::testing::MakeSyntheticIndex(5, 3);
  Rng rng(9);
  std::vector<uint64_t> cost(index.num_records());
  std::set<uint64_t> too_long;
  for (uint64_t r = 0; r < cost.size(); ++r) {
    cost[r] = static_cast<uint64_t>(rng.UniformInt(30, 400));
    if (r % 37 == 5) {
      cost[r] = 513;  // one over the budget
      too_long.insert(r);
    }
  }
  ASSERT_OK(SetConversationTokens(cost, &index));
  BatchingOptions batching;
  PackingOptions p;
  p.seq_len = 512;
  p.batch_size = 3;
  p.pack_mode = PackMode::kBestFit;
  p.split_long = false;
  p.too_long = TooLong::kSkip;
  p.fit_window = 16;
  const int world = 2;
  Rows rows;
  uint64_t per_rank = 0;
  for (int rank = 0; rank < world; ++rank) {
    EpochPlan plan, again;
    ASSERT_OK(MakeConversationPlan(index, batching, p, 7, 1, {}, rank, world, &plan));
    ASSERT_OK(MakeConversationPlan(index, batching, p, 7, 1, {}, rank, world, &again));
    EXPECT_EQ(plan.records, again.records);
    EXPECT_EQ(plan.sequences, again.sequences);
    EXPECT_EQ(plan.skipped_documents, too_long.size());
    if (rank == 0) per_rank = plan.batches.size();
    EXPECT_EQ(plan.batches.size(), per_rank) << "ranks must take the same count of batches";
    Collect(plan, cost, p.seq_len, p.batch_size, &rows);
  }
  for (uint64_t r = 0; r < cost.size(); ++r)
    EXPECT_EQ(rows.once[r], too_long.count(r) ? 0 : 1) << "record " << r;

  // Another seed, another packing.
  EpochPlan other, first;
  ASSERT_OK(MakeConversationPlan(index, batching, p, 8, 1, {}, 0, world, &other));
  ASSERT_OK(MakeConversationPlan(index, batching, p, 7, 1, {}, 0, world, &first));
  EXPECT_NE(other.records, first.records);
}

// 2 ranks take 3 batches each, then 3 ranks finish the epoch: every conversation exactly once.
TEST(ConversationPlan, ElasticResumeOnAnotherWorldFinishesTheEpochOnce) {
  IndexColumns index = loader::testing::MakeSyntheticIndex(4, 21);
  Rng rng(2);
  std::vector<uint64_t> cost(index.num_records());
  for (uint64_t& c : cost) c = static_cast<uint64_t>(rng.UniformInt(10, 250));
  ASSERT_OK(SetConversationTokens(cost, &index));
  BatchingOptions batching;
  PackingOptions p;
  p.seq_len = 256;
  p.batch_size = 2;
  p.pack_mode = PackMode::kFirstFit;
  p.split_long = false;
  p.too_long = TooLong::kSkip;
  Rows rows;
  for (int rank = 0; rank < 2; ++rank) {
    EpochPlan plan;
    ASSERT_OK(MakeConversationPlan(index, batching, p, 4, 0, {}, rank, 2, &plan));
    ASSERT_GT(plan.batches.size(), 3u);
    plan.batches.resize(3);  // what each rank consumed
    Collect(plan, cost, p.seq_len, p.batch_size, &rows);
  }
  for (int rank = 0; rank < 3; ++rank) {
    EpochPlan plan;
    ASSERT_OK(MakeConversationPlan(index, batching, p, 4, 0, {{2, 3}}, rank, 3, &plan));
    Collect(plan, cost, p.seq_len, p.batch_size, &rows);
  }
  for (uint64_t r = 0; r < cost.size(); ++r) EXPECT_EQ(rows.once[r], 1) << "record " << r;
}

// balance_ranks: each step's rows dealt to the ranks by tokens. Every step's spread of the
// ranks' tokens is within the step's longest minus shortest row (rank_balance.h) and is what the
// plan reports; the step holds the same rows, all ranks together, as unbalanced (so what an
// elastic resume consumed is unchanged); the plan is the same when made again; and an elastic
// resume of balanced ranks still finishes the epoch with every conversation once.
TEST(ConversationPlan, BalancedRanksHoldEqualTokensPerStepWithinOneRow) {
  IndexColumns index = loader::testing::MakeSyntheticIndex(6, 17);
  Rng rng(3);
  std::vector<uint64_t> cost(index.num_records());
  for (uint64_t& c : cost) c = static_cast<uint64_t>(rng.UniformInt(20, 500));
  ASSERT_OK(SetConversationTokens(cost, &index));
  BatchingOptions batching;
  PackingOptions p;
  p.seq_len = 512;
  p.batch_size = 3;
  p.pack_mode = PackMode::kBestFit;
  p.split_long = false;
  p.too_long = TooLong::kSkip;
  p.fit_window = 8;  // small windows: rows of very different fill
  const int world = 4;
  // Per step: each rank's tokens and the step's rows (sequence ids, sorted), and each row's tokens.
  struct Steps {
    std::vector<std::vector<uint64_t>> tokens;
    std::vector<std::multiset<uint64_t>> rows;
    std::vector<uint64_t> longest, shortest;
    uint64_t spread = 0;
  };
  auto steps_of = [&](bool balance, std::vector<EpochPlan>* plans) {
    PackingOptions q = p;
    q.balance_ranks = balance;
    Steps s;
    plans->assign(world, EpochPlan());
    for (int rank = 0; rank < world; ++rank) {
      EpochPlan& plan = (*plans)[rank];
      EXPECT_OK(MakeConversationPlan(index, batching, q, 7, 1, {}, rank, world, &plan));
      s.tokens.resize(plan.batches.size(), std::vector<uint64_t>(world, 0));
      s.rows.resize(plan.batches.size());
      s.longest.resize(plan.batches.size(), 0);
      s.shortest.resize(plan.batches.size(), UINT64_MAX);
      for (size_t j = 0; j < plan.batches.size(); ++j) {
        const PlannedBatch& pb = plan.batches[j];
        std::vector<uint64_t> row(pb.rows, 0);
        for (uint64_t e = pb.first; e < pb.first + pb.entries; ++e)
          row[plan.entry_rows[e]] += plan.pieces[e].width;
        for (uint32_t r = 0; r < pb.rows; ++r) {
          s.tokens[j][rank] += row[r];
          s.rows[j].insert(plan.sequences[j * pb.rows + r]);
          s.longest[j] = std::max(s.longest[j], row[r]);
          s.shortest[j] = std::min(s.shortest[j], row[r]);
        }
      }
    }
    return s;
  };
  std::vector<EpochPlan> plain_plans, plans, again;
  const Steps plain = steps_of(false, &plain_plans);
  const Steps balanced = steps_of(true, &plans);
  steps_of(true, &again);
  ASSERT_GT(balanced.tokens.size(), 3u);
  uint64_t plain_spread = 0, spread = 0;
  for (size_t j = 0; j < balanced.tokens.size(); ++j) {
    const auto [lo, hi] = std::minmax_element(balanced.tokens[j].begin(), balanced.tokens[j].end());
    EXPECT_LE(*hi - *lo, balanced.longest[j] - balanced.shortest[j]) << "step " << j;
    EXPECT_LE(*hi - *lo, p.seq_len);
    spread = std::max(spread, *hi - *lo);
    EXPECT_EQ(balanced.rows[j], plain.rows[j]) << "step " << j << " holds other rows";
    const auto [plo, phi] = std::minmax_element(plain.tokens[j].begin(), plain.tokens[j].end());
    plain_spread = std::max(plain_spread, *phi - *plo);
  }
  for (int rank = 0; rank < world; ++rank) {
    EXPECT_EQ(plans[rank].rank_token_spread, spread);
    EXPECT_EQ(plain_plans[rank].rank_token_spread, plain_spread);
    EXPECT_EQ(plans[rank].sequences, again[rank].sequences);
    EXPECT_EQ(plans[rank].records, again[rank].records);
  }
  EXPECT_LT(spread, plain_spread) << "balancing did not lower the spread";
  EXPECT_GE(plans[0].rank_token_ratio, 1.0);
  std::cout << "rank token spread per step, worst: " << plain_spread << " unbalanced, " << spread
            << " balanced (ratio " << plain_plans[0].rank_token_ratio << " -> "
            << plans[0].rank_token_ratio << ")\n";

  // 4 ranks take 2 balanced batches each, then 3 finish the epoch: every conversation once.
  Rows rows;
  for (int rank = 0; rank < world; ++rank) {
    EpochPlan plan = plans[rank];
    plan.batches.resize(2);
    Collect(plan, cost, p.seq_len, p.batch_size, &rows);
  }
  PackingOptions q = p;
  q.balance_ranks = true;
  for (int rank = 0; rank < 3; ++rank) {
    EpochPlan plan;
    ASSERT_OK(MakeConversationPlan(index, batching, q, 7, 1, {{world, 2}}, rank, 3, &plan));
    EXPECT_LE(plan.rank_token_spread, p.seq_len);
    Collect(plan, cost, p.seq_len, p.batch_size, &rows);
  }
  for (uint64_t r = 0; r < cost.size(); ++r) EXPECT_EQ(rows.once[r], 1) << "record " << r;

  // Concat's rows are all full: balancing them would do nothing, so it is refused.
  q.pack_mode = PackMode::kConcat;
  q.split_long = true;
  EpochPlan concat;
  const Status st = MakePackedPlan(index, batching, q, 7, 1, {}, 0, world, &concat);
  EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
  EXPECT_NE(st.message().find("HINT: --pack-mode best_fit"), std::string::npos) << st.message();
}

// The template's task: an ASR record (samples, transcript ids) becomes a user turn of the prompt
// and the audio, then an assistant turn of the transcript. Its rendering is spelt out here id by
// id from the character vocabulary (template_chars.h), not through the renderer, and its cost
// from the index columns equals the rendering's length.
TEST(ConversationPlan, AsrRecordRendersAsTheTaskConversationSpeltByHand) {
  ChatTemplate t;
  ASSERT_OK(ParseChatTemplate(
      R"({"roles": {"user": {"prefix": "<u>", "suffix": "|", "audio_prefix": "<a",
                             "audio_suffix": ">"},
                    "assistant": {"prefix": "<as>", "suffix": "||"}},
          "placeholder": {"ids": [40]}, "task": {"prompt": "say it"}})",
      "t.json", &t));
  ChatTemplate without;
  ASSERT_OK(ParseChatTemplate(
      R"({"roles": {"user": {"prefix": "<u>", "suffix": "|", "audio_prefix": "<a",
                             "audio_suffix": ">"},
                    "assistant": {"prefix": "<as>", "suffix": "||"}},
          "placeholder": {"ids": [40]}})",
      "t.json", &without));
  EXPECT_NE(t.checksum, without.checksum) << "the task is part of the template's identity";
  auto tok = Chars();
  ASSERT_OK(ResolveChatTemplate(*tok, &t));
  ASSERT_OK(ResolveChatTemplate(*tok, &without));
  auto ids = [](const std::string& s) {  // the vocabulary: a..z 2..27, ' ' 28, < 29, > 30, | 31
    std::vector<int32_t> v;
    for (char c : s)
      v.push_back(c == ' ' ? 28 : c == '<' ? 29 : c == '>' ? 30 : c == '|' ? 31 : c - 'a' + 2);
    return v;
  };
  features::EncoderFramesSpec spec;
  ASSERT_OK(features::EncoderFramesPreset("fastconformer", &spec));
  const uint32_t samples = 27345;
  const uint64_t frames = static_cast<uint64_t>(features::EncoderFrames(spec, samples));
  const std::vector<uint32_t> transcript = {5, 9, 14, 3, 3, 20};
  std::vector<int32_t> want;
  std::vector<uint8_t> loss;
  auto add = [&](const std::vector<int32_t>& v, bool l) {
    want.insert(want.end(), v.begin(), v.end());
    loss.insert(loss.end(), v.size(), l ? 1 : 0);
  };
  add(ids("<u>"), false);
  add(ids("<a"), false);
  add(std::vector<int32_t>(frames, 40), false);
  add(ids(">"), false);
  add(ids("say it"), false);
  add(ids("|"), false);
  add(ids("<as>"), false);
  add(std::vector<int32_t>(transcript.begin(), transcript.end()), true);
  add(ids("||"), true);

  std::vector<shards::ConversationTurn> turns;
  ASSERT_OK(AsrTaskTurns(t, samples, transcript, &turns));
  RenderedConversation r;
  ASSERT_OK(RenderConversation(
      t, turns, [&](uint64_t n) { return static_cast<uint64_t>(features::EncoderFrames(spec, n)); },
      &r));
  EXPECT_EQ(r.ids, want);
  EXPECT_EQ(r.loss, loss);
  ASSERT_EQ(r.spans.size(), 1u);
  EXPECT_EQ(r.spans[0].start, 5u);
  EXPECT_EQ(r.spans[0].length, frames);

  IndexColumns index = loader::testing::MakeSyntheticIndex(1, 3);
  index.duration.assign(index.num_records(), samples);
  index.tokens.assign(index.num_records(), static_cast<uint32_t>(transcript.size()));
  std::vector<uint64_t> costs;
  ASSERT_OK(AsrTaskIndexTokens(t, spec, index, 0, index.num_records(), &costs));
  EXPECT_EQ(costs, std::vector<uint64_t>(index.num_records(), want.size()));
  // An empty transcript is an empty answer: the same rendering without the transcript's ids.
  index.tokens[1] = 0;
  ASSERT_OK(AsrTaskIndexTokens(t, spec, index, 0, index.num_records(), &costs));
  ASSERT_EQ(costs.size(), index.num_records());
  EXPECT_EQ(costs[1], want.size() - transcript.size());
  ASSERT_OK(AsrTaskTurns(t, samples, {}, &turns));
  ASSERT_OK(RenderConversation(
      t, turns, [&](uint64_t n) { return static_cast<uint64_t>(features::EncoderFrames(spec, n)); },
      &r));
  EXPECT_EQ(r.ids.size(), costs[1]);
  EXPECT_EQ(r.loss.back(), 1) << "the assistant's suffix carries loss";

  // A template without a task is refused, with the key to add.
  Status st = AsrTaskTurns(without, samples, transcript, &turns);
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_NE(st.message().find("\"task\": {\"prompt\""), std::string::npos) << st.message();
  st = AsrTaskIndexTokens(without, spec, index, 0, index.num_records(), &costs);
  EXPECT_TRUE(st.IsInvalidArgument());
  ChatTemplate bad;
  st = ParseChatTemplate(R"({"task": {"promt": "x"}})", "t.json", &bad);
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_NE(st.message().find("t.json: $.task"), std::string::npos) << st.message();
}

// A mixture of a conversation source and an ASR source, the ASR records costed as task
// conversations: the fit's rows hold each record at its cost, and the epoch's records follow
// the weights as for any mixture (MixCounts, mix.h).
TEST(ConversationPlan, MixtureWithAnAsrSourceFollowsItsWeights) {
  ChatTemplate t;
  ASSERT_OK(ParseChatTemplate(
      R"({"roles": {"user": {"prefix": "<u>", "suffix": "|"},
                    "assistant": {"prefix": "<as>", "suffix": "||"}},
          "placeholder": {"ids": [40]}, "task": {"prompt": "say it"}})",
      "t.json", &t));
  auto tok = Chars();
  ASSERT_OK(ResolveChatTemplate(*tok, &t));
  features::EncoderFramesSpec spec;
  ASSERT_OK(features::EncoderFramesPreset("fastconformer", &spec));
  IndexColumns index = loader::testing::MakeSyntheticIndex(6, 23);
  const uint64_t asr_first = index.shard_first_record[3], n = index.num_records();
  index.source_first_record = {0, asr_first, n};
  Rng rng(4);
  std::vector<uint64_t> cost(n);
  for (uint64_t r = 0; r < asr_first; ++r) cost[r] = static_cast<uint64_t>(rng.UniformInt(30, 400));
  index.duration.assign(n, 0);
  index.tokens.assign(n, 0);
  for (uint64_t r = asr_first; r < n; ++r) {
    index.duration[r] = static_cast<uint64_t>(rng.UniformInt(8000, 160000));
    index.tokens[r] = static_cast<uint32_t>(rng.UniformInt(3, 60));
  }
  std::vector<uint64_t> asr;
  ASSERT_OK(AsrTaskIndexTokens(t, spec, index, asr_first, n, &asr));
  std::copy(asr.begin(), asr.end(), cost.begin() + static_cast<std::ptrdiff_t>(asr_first));
  ASSERT_OK(SetConversationTokens(cost, &index));
  BatchingOptions batching;
  PackingOptions p;
  p.seq_len = 1024;
  p.batch_size = 2;
  p.pack_mode = PackMode::kBestFit;
  p.split_long = false;
  p.too_long = TooLong::kSkip;
  MixOptions mix;
  mix.sources = {{"conversations", 3.0}, {"asr", 1.0}};
  mix.epoch_records = 200;
  EpochPlan plan;
  ASSERT_OK(MakeFitPlan(index, batching, p, 9, 0, {}, 0, 1, &mix, &plan));
  EXPECT_EQ(plan.source_records, MixCounts({3.0, 1.0}, 200));
  EXPECT_EQ(plan.source_records[1], 50u);
  uint64_t from_asr = 0;
  for (size_t e = 0; e < plan.records.size(); ++e) {
    const uint64_t r = plan.records[e];
    EXPECT_EQ(plan.pieces[e].width, cost[r]) << "record " << r;
    if (r >= asr_first) ++from_asr;
  }
  EXPECT_GT(from_asr, 0u);
}

}  // namespace
}  // namespace sluice::loader
