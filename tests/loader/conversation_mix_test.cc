// Mixtures of conversation datasets with plain ASR datasets through the Loader
// (docs/conversations.md, "ASR datasets as task conversations"): an ASR record's row is its task
// conversation spelt here by hand (ids, loss mask, placeholder span) with its audio features those
// the plain ASR loader computes for it; every record of every source once per epoch and the
// mixture's weights kept; the same batches for any thread count, after a mid-epoch resume and
// over an elastic resume; and the sources a mixture cannot render refused with their fix.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "assert_ok.h"
#include "conversation_dataset.h"
#include "features/encoder_frames.h"
#include "loader/dataset_tokenizer.h"
#include "loader/digest.h"
#include "loader/loader_impl.h"
#include "loader/mix.h"
#include "shards/manifest.h"
#include "test_dataset.h"
#include "test_util.h"

namespace sluice::loader {
namespace {

using namespace conversation_testing;  // NOLINT: the conversation dataset's helpers

constexpr int kAsr = 24;  // ASR records; their global ids follow the conversations'

// kTemplate with a task: an ASR record is "<u><a" placeholders "> say it|" then its answer.
constexpr const char* kTaskTemplate =
    R"({"roles": {"system": {"prefix": "<s>", "suffix": "|"},
                  "user": {"prefix": "<u>", "suffix": "|", "audio_prefix": "<a",
                           "audio_suffix": ">"},
                  "assistant": {"prefix": "<as>", "suffix": "||"}},
        "placeholder": {"ids": [77]}, "task": {"prompt": "say it"}})";

testing::AudioDatasetSpec AsrSpec() {
  testing::AudioDatasetSpec spec;
  spec.records = kAsr;
  spec.min_samples = 1600;
  spec.max_samples = 16000;
  spec.shard_size = 150000;  // a few shards of a few blocks
  spec.block_size = 50000;
  spec.with_tokens = true;  // record i's transcript ids: i * 10 + k, k < 1 + i % 9
  return spec;
}

std::vector<uint32_t> Transcript(int i) {
  std::vector<uint32_t> ids(1 + i % 9);
  for (size_t k = 0; k < ids.size(); ++k) ids[k] = static_cast<uint32_t>(i * 10 + k);
  return ids;
}

// An ASR dataset as shardify audio --tokenizer makes it, its manifest naming `tokenizer`.
void WriteAsr(const std::string& dir, testing::AudioDatasetSpec spec,
              const shards::JsonValue& tokenizer) {
  std::filesystem::create_directories(dir);
  shards::Manifest m = testing::WriteAudioDataset(dir, spec);
  m.tokenizer = tokenizer;
  ASSERT_OK(shards::SaveManifest(dir, m));
}

// ASR record i as the task renders it, spelt piece by piece with the tokenizer (not through
// AsrTaskTurns or RenderConversation): the user's prefix, audio prefix, one placeholder per
// encoder frame, audio suffix, the prompt, the suffix; the assistant's prefix, then the
// transcript and suffix, which alone carry loss.
RenderedConversation AsrByHand(int i, const std::vector<uint32_t>& t) {
  features::TextNormalizeOptions norm;
  auto tok = Chars(&norm);
  features::EncoderFramesSpec spec;
  EXPECT_OK(features::EncoderFramesPreset("fastconformer", &spec));
  RenderedConversation r;
  auto add = [&](std::vector<int32_t> v, bool loss) {
    r.ids.insert(r.ids.end(), v.begin(), v.end());
    r.loss.insert(r.loss.end(), v.size(), loss ? 1 : 0);
  };
  auto text = [&](const std::string& s, bool loss) {
    std::vector<int32_t> v;
    EXPECT_OK(tok->Encode(s, &v));
    add(v, loss);
  };
  text("<u>", false);
  text("<a", false);
  const uint64_t samples = testing::RecordSamples(AsrSpec(), i).size();
  const uint64_t frames = static_cast<uint64_t>(features::EncoderFrames(spec, samples));
  r.spans.push_back({0, r.ids.size(), frames});
  add(std::vector<int32_t>(frames, 77), false);
  text(">", false);
  text("say it", false);
  text("|", false);
  text("<as>", false);
  add(std::vector<int32_t>(t.begin(), t.end()), true);
  text("||", true);
  return r;
}
RenderedConversation AsrByHand(int i) { return AsrByHand(i, Transcript(i)); }

class ConversationMixTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new sluice::testing::TempDir();
    WriteConversations(dir_->Join("conv"), false);
    WriteConversations(dir_->Join("conv2"), false);
    shards::Manifest cm;
    ASSERT_OK(shards::LoadManifest(dir_->Join("conv"), &cm));
    WriteAsr(dir_->Join("asr"), AsrSpec(), cm.tokenizer);
    sluice::testing::WriteFile(dir_->Join("task.json"), kTaskTemplate);
    sluice::testing::WriteFile(dir_->Join("no_task.json"), kTemplate);
    for (int i = 0; i < kRecords; ++i) expected_.push_back(Expected(i, kTaskTemplate));
    for (int i = 0; i < kAsr; ++i) expected_.push_back(AsrByHand(i));
    // The features the plain ASR loader gives each ASR record (the same feature options).
    LoaderOptions o;
    o.threads = 1;
    std::unique_ptr<Loader> l;
    ASSERT_OK(Loader::Open(dir_->Join("asr"), o, &l));
    ASSERT_OK(l->Start(0));
    const Batch* b;
    while (l->Next(&b).ok() && b != nullptr) {
      const size_t row_values = static_cast<size_t>(b->frames()) * b->dim();
      for (size_t row = 0; row < b->size(); ++row) {
        const float* f = b->features_f32() + row * row_values;
        fbank_[std::string(b->keys()[row])].assign(f, f + b->lengths()[row] * b->dim());
      }
    }
    ASSERT_EQ(fbank_.size(), static_cast<size_t>(kAsr));
  }
  static void TearDownTestSuite() { delete dir_; }

  static LoaderOptions Options(bool packed = true) {
    LoaderOptions o;
    o.threads = 2;
    o.seed = 5;
    o.batching.shuffle_window = 8;
    if (packed) {
      o.packing.seq_len = kSeqLen;
      o.packing.batch_size = 2;
      o.packing.shuffle_window = 4;
      o.packing.chunk_tokens = 300;
      o.packing.pack_mode = PackMode::kBestFit;
      o.packing.fit_window = 12;
      o.packing.split_long = false;
      o.packing.too_long = TooLong::kSkip;
    } else {
      o.batching.max_frames = 0;
      o.batching.max_batch_size = 4;
    }
    o.conversation.chat_template = dir_->Join("task.json");
    o.conversation.encoder_frames = "fastconformer";
    return o;
  }

  static MixOptions Mix(double conv, double asr, uint64_t epoch_records = 0) {
    MixOptions m;
    m.sources = {{dir_->Join("conv"), conv}, {dir_->Join("asr"), asr}};
    m.epoch_records = epoch_records;
    return m;
  }

  static std::string KeyOf(uint64_t r) {
    return r < kRecords ? Key(static_cast<int>(r))
                        : testing::RecordKey(static_cast<int>(r - kRecords));
  }

  // Audio slot `a` of `b` against span `k` of record r's rendering placed at column c of `row`;
  // an ASR record's features against the plain ASR loader's.
  static void CheckAudio(const Batch& b, size_t a, size_t row, size_t c, uint64_t r, size_t k) {
    ASSERT_LT(a, b.num_audio()) << "record " << r;
    const PlaceholderSpan& want = expected_[r].spans[k];
    const int32_t* span = b.audio_spans().data() + 3 * a;
    EXPECT_EQ(span[0], static_cast<int32_t>(row));
    EXPECT_EQ(span[1], static_cast<int32_t>(c + want.start)) << "record " << r;
    EXPECT_EQ(span[2], static_cast<int32_t>(want.length)) << "record " << r;
    if (r < kRecords) return;
    const std::vector<float>& f = fbank_.at(KeyOf(r));
    const size_t dim = static_cast<size_t>(b.audio_dim());
    ASSERT_EQ(static_cast<size_t>(b.audio_lengths()[a]) * dim, f.size()) << "record " << r;
    const float* got = static_cast<const float*>(b.audio_features()) +
                       a * static_cast<size_t>(b.audio_frames()) * dim;
    for (size_t v = 0; v < f.size(); ++v) ASSERT_EQ(got[v], f[v]) << "record " << r << " " << v;
    ++asr_audio_;
  }

  // Every packed row of `b` against the renderings; counts the records of rows that are not
  // repeats (sequence < fit_rows) by key.
  static void CheckPacked(const Batch& b, uint64_t fit_rows, std::map<std::string, int>* seen) {
    const size_t L = static_cast<size_t>(b.seq_len());
    size_t a = 0;
    for (size_t row = 0; row < b.size(); ++row) {
      const int32_t* ids = b.tokens() + row * (L + 1);
      const int64_t* doc = b.doc_ids() + row * L;
      const uint8_t* mask = b.loss_mask() + row * L;
      size_t c = 0;
      while (c < L && doc[c] >= 0) {
        const uint64_t r = static_cast<uint64_t>(doc[c]);
        ASSERT_LT(r, expected_.size());
        if (c == 0) {
          ASSERT_EQ(b.keys()[row], KeyOf(r)) << "record ids are not the sources' order";
        }
        const RenderedConversation& want = expected_[r];
        const size_t n = want.ids.size();
        ASSERT_LE(c + n, L);
        for (size_t k = 0; k < n; ++k) {
          ASSERT_EQ(doc[c + k], static_cast<int64_t>(r)) << "record " << r << " cut at " << k;
          ASSERT_EQ(ids[c + k], want.ids[k]) << "record " << r << " id " << k;
          ASSERT_EQ(mask[c + k], k + 1 < n && want.loss[k + 1]) << "record " << r << " " << k;
        }
        for (size_t k = 0; k < want.spans.size(); ++k) CheckAudio(b, a++, row, c, r, k);
        if (b.sequences()[row] < fit_rows) ++(*seen)[KeyOf(r)];
        c += n;
      }
    }
    EXPECT_EQ(a, b.num_audio());
  }

  static sluice::testing::TempDir* dir_;
  static inline uint64_t asr_audio_ = 0;  // ASR audio slots compared with the ASR loader's
  static std::vector<RenderedConversation> expected_;       // by global record id
  static std::map<std::string, std::vector<float>> fbank_;  // ASR key -> plain loader's fbank
};
sluice::testing::TempDir* ConversationMixTest::dir_ = nullptr;
std::vector<RenderedConversation> ConversationMixTest::expected_;
std::map<std::string, std::vector<float>> ConversationMixTest::fbank_;

// (a) packed: every row as spelt by hand, ASR audio as the ASR loader's; with weights in the
// sources' proportion (40 : 24) the epoch holds every record of both once.
TEST_F(ConversationMixTest, AsrRecordsArePackedAsTheirTaskConversationsSpeltByHand) {
  std::unique_ptr<Loader> l;
  ASSERT_OK(Loader::Open(Mix(5, 3), Options(), &l));
  ASSERT_OK(l->Start(0));
  const EpochPlan& plan = ImplOf(*l).plan();
  EXPECT_EQ(plan.source_records, (std::vector<uint64_t>{kRecords, kAsr}));
  std::map<std::string, int> seen;
  const Batch* b;
  Status st;
  asr_audio_ = 0;
  while ((st = l->Next(&b)).ok() && b != nullptr) CheckPacked(*b, plan.fit_rows, &seen);
  ASSERT_OK(st);
  EXPECT_GE(asr_audio_, static_cast<uint64_t>(kAsr)) << "ASR features left unchecked";
  for (int i = 0; i < kRecords; ++i) EXPECT_EQ(seen[Key(i)], i == kLong ? 0 : 1) << Key(i);
  for (int i = 0; i < kAsr; ++i) EXPECT_EQ(seen[testing::RecordKey(i)], 1) << i;
}

// (a) padded: a row per record, its ids and loss mask the rendering's, its audio slot as packed.
TEST_F(ConversationMixTest, AsrRecordsArePaddedRowsOfTheirTaskConversations) {
  std::unique_ptr<Loader> l;
  ASSERT_OK(Loader::Open(Mix(5, 3), Options(false), &l));
  ASSERT_OK(l->Start(0));
  std::map<std::string, int> seen;
  const Batch* b;
  Status st;
  asr_audio_ = 0;
  while ((st = l->Next(&b)).ok() && b != nullptr) {
    const size_t width = static_cast<size_t>(b->max_tokens());
    size_t a = 0;
    for (size_t row = 0; row < b->size(); ++row) {
      const uint64_t r = b->record_ids()[row];
      ASSERT_EQ(b->keys()[row], KeyOf(r));
      const RenderedConversation& want = expected_[r];
      const size_t n = want.ids.size();
      ASSERT_EQ(b->token_lengths()[row], static_cast<int32_t>(n));
      for (size_t k = 0; k < width; ++k) {
        ASSERT_EQ(b->tokens()[row * width + k], k < n ? want.ids[k] : 0) << "record " << r;
        ASSERT_EQ(b->loss_mask()[row * width + k], k + 1 < n && want.loss[k + 1]) << r;
      }
      for (size_t k = 0; k < want.spans.size(); ++k) CheckAudio(*b, a++, row, 0, r, k);
      ++seen[KeyOf(r)];
    }
    EXPECT_EQ(a, b->num_audio());
  }
  ASSERT_OK(st);
  EXPECT_EQ(asr_audio_, static_cast<uint64_t>(kAsr));
  EXPECT_EQ(seen.size(), static_cast<size_t>(kRecords + kAsr));
  for (const auto& [key, n] : seen) EXPECT_EQ(n, 1) << key;
}

// (b) A 3 : 1 mixture of 80 records: the plan's counts are MixCounts', and the rows of both
// ranks hold that many records of each source (the conversations' too-long one skipped).
TEST_F(ConversationMixTest, TheMixtureFollowsItsWeights) {
  LoaderOptions o = Options();
  o.world = 2;
  uint64_t conv = 0, asr = 0, skipped = 0;
  for (int rank = 0; rank < 2; ++rank) {
    o.rank = rank;
    std::unique_ptr<Loader> l;
    ASSERT_OK(Loader::Open(Mix(3, 1, 80), o, &l));
    ASSERT_OK(l->Start(1));
    const EpochPlan& plan = ImplOf(*l).plan();
    EXPECT_EQ(plan.source_records, MixCounts({3.0, 1.0}, 80));
    skipped = plan.skipped_documents;
    std::map<std::string, int> seen;
    const Batch* b;
    Status st;
    while ((st = l->Next(&b)).ok() && b != nullptr) CheckPacked(*b, plan.fit_rows, &seen);
    ASSERT_OK(st);
    for (const auto& [key, n] : seen) (key.rfind("conv-", 0) == 0 ? conv : asr) += n;
  }
  EXPECT_EQ(asr, 20u);
  EXPECT_EQ(conv + skipped, 60u);
}

// Each conversation placed in packed batch `b`, where its doc ids start:
// fn(row, column, record, repeat), repeat when its row repeats records for whole batches (rows
// from plan.fit_rows on).
template <class Fn>
void ForEachPlaced(const Batch& b, uint64_t fit_rows, Fn&& fn) {
  const size_t L = static_cast<size_t>(b.seq_len());
  for (size_t row = 0; row < b.size(); ++row) {
    const int64_t* doc = b.doc_ids() + row * L;
    for (size_t c = 0; c < L; ++c)
      if (doc[c] >= 0 && (c == 0 || doc[c - 1] != doc[c]))
        fn(row, c, static_cast<uint64_t>(doc[c]), b.sequences()[row] >= fit_rows);
  }
}

// Two conversation datasets (no ASR) mix as well: each record of each once.
TEST_F(ConversationMixTest, TwoConversationDatasetsMix) {
  MixOptions m;
  m.sources = {{dir_->Join("conv"), 1}, {dir_->Join("conv2"), 1}};
  std::unique_ptr<Loader> l;
  ASSERT_OK(Loader::Open(m, Options(), &l));
  ASSERT_OK(l->Start(0));
  const EpochPlan& plan = ImplOf(*l).plan();
  std::map<uint64_t, int> seen;
  const Batch* b;
  Status st;
  while ((st = l->Next(&b)).ok() && b != nullptr) {
    const size_t L = static_cast<size_t>(b->seq_len());
    ForEachPlaced(*b, plan.fit_rows, [&](size_t row, size_t c, uint64_t r, bool repeat) {
      if (repeat) return;
      ++seen[r];
      // conv2's records are conv's, written again: the same renderings.
      const RenderedConversation& want = expected_[r % kRecords];
      for (size_t k = 0; k < want.ids.size(); ++k)
        ASSERT_EQ(b->tokens()[row * (L + 1) + c + k], want.ids[k]) << r;
    });
  }
  ASSERT_OK(st);
  for (uint64_t r = 0; r < 2 * kRecords; ++r)
    EXPECT_EQ(seen[r], r % kRecords == kLong ? 0 : 1) << "record " << r;
}

// The sources' order is the user's: with the ASR dataset first, the conversations still lead
// (their manifest and tokenizer describe the batches) and the ASR records come first in the
// index; every record of both once.
TEST_F(ConversationMixTest, AnAsrSourceMayComeFirst) {
  MixOptions m;
  m.sources = {{dir_->Join("asr"), 3}, {dir_->Join("conv"), 5}};
  std::unique_ptr<Loader> l;
  ASSERT_OK(Loader::Open(m, Options(), &l));
  EXPECT_EQ(ImplOf(*l).dataset().dir(), dir_->Join("conv"));
  ASSERT_OK(l->Start(0));
  const EpochPlan& plan = ImplOf(*l).plan();
  std::map<uint64_t, int> seen;
  const Batch* b;
  Status st;
  while ((st = l->Next(&b)).ok() && b != nullptr) {
    const size_t L = static_cast<size_t>(b->seq_len());
    ForEachPlaced(*b, plan.fit_rows, [&](size_t row, size_t c, uint64_t r, bool repeat) {
      // Record r is ASR record r, or conversation r - kAsr.
      const RenderedConversation& want = expected_[r < kAsr ? kRecords + r : r - kAsr];
      for (size_t k = 0; k < want.ids.size(); ++k)
        ASSERT_EQ(b->tokens()[row * (L + 1) + c + k], want.ids[k]) << r;
      if (!repeat) ++seen[r];
    });
  }
  ASSERT_OK(st);
  for (uint64_t r = 0; r < kAsr + kRecords; ++r)
    EXPECT_EQ(seen[r], r == kAsr + kLong ? 0 : 1) << "record " << r;
}

std::vector<uint64_t> Digests(const MixOptions& m, const LoaderOptions& o, const ResumeState& at,
                              size_t take = ~size_t{0}) {
  std::unique_ptr<Loader> l;
  std::vector<uint64_t> out;
  const Status st = Loader::Open(m, o, &l);
  EXPECT_OK(st);
  if (!st.ok()) return out;
  EXPECT_OK(l->Start(at));
  const Batch* b;
  while (out.size() < take && l->Next(&b).ok() && b != nullptr) out.push_back(DigestOf(*b));
  return out;
}

// (c) The same batches with 1 or 2 threads, and after a resume at batch 3, packed and padded.
TEST_F(ConversationMixTest, SameBatchesForAnyThreadCountAndAfterAMidEpochResume) {
  for (const bool packed : {true, false}) {
    LoaderOptions o = Options(packed);
    ResumeState start;
    start.epoch = 1;
    o.threads = 1;
    const std::vector<uint64_t> one = Digests(Mix(3, 1), o, start);
    o.threads = 2;
    const std::vector<uint64_t> all = Digests(Mix(3, 1), o, start);
    ASSERT_GT(all.size(), 4u);
    EXPECT_EQ(one, all) << (packed ? "packed" : "padded");
    std::unique_ptr<Loader> l;
    ASSERT_OK(Loader::Open(Mix(3, 1), o, &l));
    ASSERT_OK(l->Start(1));
    const Batch* b;
    for (int j = 0; j < 3; ++j) ASSERT_OK(l->Next(&b));
    const ResumeState at = l->state();
    EXPECT_EQ(Digests(Mix(3, 1), o, at), std::vector<uint64_t>(all.begin() + 3, all.end()))
        << (packed ? "packed" : "padded");
  }
}

// (c) 2 ranks take 2 batches each, then 3 ranks finish the epoch: the records of the rows that
// are not repeats are, together, those of the uninterrupted 2-rank epoch.
TEST_F(ConversationMixTest, ElasticResumeOnThreeRanksFinishesTheEpochOnce) {
  auto run = [&](int world, const ResumeState& at, size_t take, std::vector<uint64_t>* records) {
    LoaderOptions o = Options();
    o.world = world;
    for (int rank = 0; rank < world; ++rank) {
      o.rank = rank;
      std::unique_ptr<Loader> l;
      ASSERT_OK(Loader::Open(Mix(3, 1), o, &l));
      ASSERT_OK(l->Start(at));
      const EpochPlan& plan = ImplOf(*l).plan();
      const Batch* b;
      Status st;
      for (size_t j = 0; j < take && (st = l->Next(&b)).ok() && b != nullptr; ++j) {
        ForEachPlaced(*b, plan.fit_rows, [&](size_t, size_t, uint64_t r, bool repeat) {
          if (!repeat) records->push_back(r);
        });
      }
      ASSERT_OK(st);
    }
  };
  ResumeState start;
  start.epoch = 2;
  std::vector<uint64_t> whole, elastic;
  run(2, start, ~size_t{0}, &whole);
  run(2, start, 2, &elastic);
  ResumeState at;
  at.epoch = 2;
  at.batches = 2;
  at.world = 2;
  run(3, at, ~size_t{0}, &elastic);
  std::sort(whole.begin(), whole.end());
  std::sort(elastic.begin(), elastic.end());
  ASSERT_FALSE(whole.empty());
  EXPECT_EQ(elastic, whole);
}

// (d) What a mixture cannot render is refused, naming the ASR dataset and the fix.
TEST_F(ConversationMixTest, SourcesThatCannotBeRenderedAreRefused) {
  shards::Manifest cm;
  ASSERT_OK(shards::LoadManifest(dir_->Join("conv"), &cm));
  testing::AudioDatasetSpec spec = AsrSpec();
  spec.records = 4;
  spec.sample_rate = 8000;
  WriteAsr(dir_->Join("asr_8k"), spec, cm.tokenizer);
  spec.sample_rate = 16000;
  shards::JsonValue other = cm.tokenizer;
  (*other)["vocab"].push_back("!");
  WriteAsr(dir_->Join("asr_other_tokenizer"), spec, other);
  WriteAsr(dir_->Join("asr_stored_segments"), spec, cm.tokenizer);
  {
    // Segments of stored recordings hold no audio of their own (their recording's chunks do).
    shards::Manifest m;
    ASSERT_OK(shards::LoadManifest(dir_->Join("asr_stored_segments"), &m));
    m.segments = "stored";
    m.chunk_samples = 160000;
    ASSERT_OK(shards::SaveManifest(dir_->Join("asr_stored_segments"), m));
  }
  spec.with_tokens = false;
  WriteAsr(dir_->Join("asr_no_ids"), spec, cm.tokenizer);
  auto refused = [&](const std::string& asr, const LoaderOptions& o, const std::string& what) {
    MixOptions m;
    m.sources = {{dir_->Join("conv"), 1}, {dir_->Join(asr), 1}};
    std::unique_ptr<Loader> l;
    const Status st = Loader::Open(m, o, &l);
    EXPECT_TRUE(st.IsInvalidArgument()) << asr << ": " << st.ToString();
    EXPECT_NE(st.message().find(dir_->Join(asr)), std::string::npos) << st.message();
    EXPECT_NE(st.message().find(what), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("HINT"), std::string::npos) << st.message();
  };
  refused("asr_8k", Options(), "shardify audio --sample-rate 16000");
  refused("asr_other_tokenizer", Options(), "another tokenizer");
  {
    // The two tokenizers are told apart by their descriptions' XXH3, not printed whole: a char
    // tokenizer's description is its whole vocabulary.
    MixOptions m;
    m.sources = {{dir_->Join("conv"), 1}, {dir_->Join("asr_other_tokenizer"), 1}};
    std::unique_ptr<Loader> l;
    const std::string message = Loader::Open(m, Options(), &l).message();
    EXPECT_NE(message.find("description xxh3"), std::string::npos) << message;
    EXPECT_EQ(message.find("\"vocab\""), std::string::npos) << message;
  }
  refused("asr_no_ids", Options(), "shardify audio --tokenizer");
  refused("asr_stored_segments", Options(), "without --segments stored");
  LoaderOptions o = Options();
  o.conversation.chat_template = dir_->Join("no_task.json");
  refused("asr", o, "\"task\": {\"prompt\"");
  o = Options(false);
  o.conversation.chat_template = dir_->Join("no_task.json");
  refused("asr", o, "declares no task");
}

// Two datasets tokenized with one tokenizer agree however its file was named: the path as given
// and an absent add_special_tokens (false, docs/formats/manifest.md) are no part of what the ids
// mean, in a conversation/ASR mixture and in a mixture of conversation datasets.
TEST_F(ConversationMixTest, TokenizersAgreeByMeaningNotByTheirWholeDescription) {
  shards::Manifest cm;
  ASSERT_OK(shards::LoadManifest(dir_->Join("conv"), &cm));
  ASSERT_FALSE(cm.tokenizer->contains("add_special_tokens"));
  testing::AudioDatasetSpec spec = AsrSpec();
  spec.records = 4;
  shards::JsonValue given = cm.tokenizer;
  (*given)["given"] = "./tok.json";
  (*given)["add_special_tokens"] = false;
  WriteAsr(dir_->Join("asr_given"), spec, given);
  MixOptions m;
  m.sources = {{dir_->Join("conv"), 1}, {dir_->Join("asr_given"), 1}};
  std::unique_ptr<Loader> l;
  EXPECT_OK(Loader::Open(m, Options(), &l));
  WriteConversations(dir_->Join("conv_given"), false);
  shards::Manifest gm;
  ASSERT_OK(shards::LoadManifest(dir_->Join("conv_given"), &gm));
  (*gm.tokenizer)["given"] = "/abs/tok.json";
  ASSERT_OK(shards::SaveManifest(dir_->Join("conv_given"), gm));
  m.sources = {{dir_->Join("conv"), 1}, {dir_->Join("conv_given"), 1}};
  EXPECT_OK(Loader::Open(m, Options(), &l));
}

// An ASR dataset tokenized with the file's special tokens around each transcript would put them
// (a BOS) inside the task conversation's answer: refused, naming the key and the flag that fixes
// it; a tokenizer that differs names the key that differs.
TEST_F(ConversationMixTest, AsrTranscriptsWithSpecialTokensAreRefusedWithTheFlag) {
  shards::Manifest cm;
  ASSERT_OK(shards::LoadManifest(dir_->Join("conv"), &cm));
  testing::AudioDatasetSpec spec = AsrSpec();
  spec.records = 4;
  shards::JsonValue bos = cm.tokenizer;
  (*bos)["add_special_tokens"] = true;
  WriteAsr(dir_->Join("asr_bos"), spec, bos);
  MixOptions m;
  m.sources = {{dir_->Join("conv"), 1}, {dir_->Join("asr_bos"), 1}};
  std::unique_ptr<Loader> l;
  Status st = Loader::Open(m, Options(), &l);
  EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
  EXPECT_NE(st.message().find("add_special_tokens"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("HINT: shardify audio --add-special-tokens false"), std::string::npos)
      << st.message();
  shards::JsonValue other = cm.tokenizer;
  (*other)["vocab_size"] = (*other)["vocab_size"].get<int>() + 1;
  WriteAsr(dir_->Join("asr_other_size"), spec, other);
  m.sources = {{dir_->Join("conv"), 1}, {dir_->Join("asr_other_size"), 1}};
  st = Loader::Open(m, Options(), &l);
  EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
  EXPECT_NE(st.message().find("vocab_size " + (*other)["vocab_size"].dump() + " vs " +
                              (*cm.tokenizer)["vocab_size"].dump()),
            std::string::npos)
      << st.message();
}

// An ASR record with an empty transcript (shardify audio accepts empty text) is its task
// conversation with an empty answer: the assistant's prefix, then its suffix, which carries the
// loss (the model learns to answer nothing); every record of both sources once, packed and padded.
TEST_F(ConversationMixTest, AnEmptyTranscriptIsAnEmptyAnswer) {
  shards::Manifest cm;
  ASSERT_OK(shards::LoadManifest(dir_->Join("conv"), &cm));
  testing::AudioDatasetSpec spec = AsrSpec();
  spec.long_transcript = 5;  // record 5: no text, no ids
  spec.long_tokens = 0;
  WriteAsr(dir_->Join("asr_empty"), spec, cm.tokenizer);
  std::vector<RenderedConversation> want = expected_;
  want[kRecords + 5] = AsrByHand(5, {});
  MixOptions m;
  m.sources = {{dir_->Join("conv"), 5}, {dir_->Join("asr_empty"), 3}};
  for (const bool packed : {false, true}) {
    std::unique_ptr<Loader> l;
    ASSERT_OK(Loader::Open(m, Options(packed), &l));
    ASSERT_OK(l->Start(0));
    const EpochPlan& plan = ImplOf(*l).plan();
    std::map<uint64_t, int> seen;
    const Batch* b;
    Status st;
    while ((st = l->Next(&b)).ok() && b != nullptr) {
      const size_t L = packed ? static_cast<size_t>(b->seq_len()) : b->max_tokens();
      for (size_t row = 0; row < b->size(); ++row) {
        const int32_t* ids = b->tokens() + row * (packed ? L + 1 : L);
        const uint8_t* mask = b->loss_mask() + row * L;
        size_t c = 0;
        while (c < L) {
          const uint64_t r = packed ? (b->doc_ids()[row * L + c] < 0
                                           ? ~uint64_t{0}
                                           : static_cast<uint64_t>(b->doc_ids()[row * L + c]))
                                    : b->record_ids()[row];
          if (r == ~uint64_t{0}) break;
          ASSERT_LT(r, want.size());
          const size_t n = want[r].ids.size();
          ASSERT_LE(c + n, L);
          for (size_t k = 0; k < n; ++k) {
            ASSERT_EQ(ids[c + k], want[r].ids[k]) << "record " << r << " id " << k;
            ASSERT_EQ(mask[c + k], k + 1 < n && want[r].loss[k + 1]) << "record " << r;
          }
          if (!packed || b->sequences()[row] < plan.fit_rows) ++seen[r];
          c += n;
          if (!packed) break;
        }
      }
    }
    ASSERT_OK(st);
    EXPECT_EQ(seen[kRecords + 5], 1) << (packed ? "packed" : "padded");
    for (uint64_t r = 0; r < kRecords + kAsr; ++r)
      EXPECT_EQ(seen[r], packed && r == kLong ? 0 : 1) << r << (packed ? " packed" : " padded");
  }
  // Where an empty answer is not wanted, a filter on the answer's tokens drops it.
  LoaderOptions o = Options(false);
  o.filter = "text_tokens > 0";
  std::unique_ptr<Loader> l;
  ASSERT_OK(Loader::Open(m, o, &l));
  ASSERT_OK(l->Start(0));
  const Batch* b;
  Status st;
  uint64_t rows = 0;
  while ((st = l->Next(&b)).ok() && b != nullptr)
    for (size_t row = 0; row < b->size(); ++row, ++rows)
      EXPECT_NE(b->record_ids()[row], kRecords + 5u);
  ASSERT_OK(st);
  EXPECT_EQ(rows, kRecords + kAsr - 1u);
}

// The comparison itself, on hf descriptions as shardify writes them: provenance (given, trained)
// and an absent add_special_tokens (false) make no difference; the ids' meaning does, by key.
TEST(TokenizerDifference, ComparesWhatTheIdsMean) {
  const nlohmann::json a = {{"type", "hf"},
                            {"given", "./tok.json"},
                            {"file", "tokenizer.json"},
                            {"xxh3", "0123456789abcdef"},
                            {"add_special_tokens", false},
                            {"normalize", {{"lowercase", false}}},
                            {"vocab_size", 128256},
                            {"blank_id", nullptr},
                            {"end_of_document_id", 128001}};
  nlohmann::json b = a;
  b["given"] = "/abs/tok.json";
  b.erase("add_special_tokens");
  EXPECT_EQ(TokenizerDifference(a, b), "");
  EXPECT_EQ(TokenizerDifference(nlohmann::json(), nlohmann::json()), "");
  EXPECT_NE(TokenizerDifference(a, nlohmann::json()), "");
  b["add_special_tokens"] = true;
  EXPECT_EQ(TokenizerDifference(a, b), "add_special_tokens false vs true");
  b = a;
  b["xxh3"] = "fedcba9876543210";
  EXPECT_EQ(TokenizerDifference(a, b), "xxh3 \"0123456789abcdef\" vs \"fedcba9876543210\"");
  b = a;
  b["end_of_document_id"] = 128009;
  EXPECT_EQ(TokenizerDifference(a, b), "end_of_document_id 128001 vs 128009");
  b = a;
  b["encoding"] = "cl100k_base";
  EXPECT_EQ(TokenizerDifference(a, b), "encoding none vs \"cl100k_base\"");
  nlohmann::json s = {{"type", "sentencepiece"},
                      {"trained", {{"model_type", "bpe"}, {"pieces", 500}, {"seed", 1}}},
                      {"xxh3", "0123456789abcdef"}};
  nlohmann::json t = s;
  t["trained"]["seed"] = 2;
  EXPECT_EQ(TokenizerDifference(s, t), "");
  t["allow_unknown"] = true;
  EXPECT_EQ(TokenizerDifference(s, t), "allow_unknown false vs true");
  // A char vocabulary is printed as its XXH3, not whole.
  const nlohmann::json c = {{"type", "char"}, {"vocab", std::vector<std::string>(100, "x")}};
  nlohmann::json d = c;
  d["vocab"].push_back("y");
  const std::string why = TokenizerDifference(c, d);
  EXPECT_EQ(why.rfind("vocab xxh3 ", 0), 0u) << why;
  EXPECT_LT(why.size(), 60u) << why;
}

}  // namespace
}  // namespace sluice::loader
