// Conversation datasets through the Loader (loader/conversation_plan.h, the packed collator):
// rows of whole conversations within the budget, each conversation once per epoch over the
// ranks, its ids, positions and loss mask those of the template's rendering (compared with a
// rendering of the turns as written, not as read back), too-long ones skipped and counted, exact
// mid-epoch resume and elastic resume on another world, and options that do not apply refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "assert_ok.h"
#include "conversation_dataset.h"
#include "features/text_normalize.h"
#include "loader/dataset_tokenizer.h"
#include "loader/digest.h"
#include "loader/loader_impl.h"
#include "loader/options_json.h"
#include "shards/dataset_writer.h"
#include "shards/record.h"
#include "template_chars.h"
#include "test_dataset.h"
#include "test_util.h"

namespace sluice::loader {
namespace {

using namespace conversation_testing;  // NOLINT: the dataset's helpers, shared with the audio tests

// Text-only conversation i as kTextTemplate renders it, spelled out here rather than through
// RenderConversation: each turn's prefix without loss, then its text and suffix, with loss on
// the assistant's alone.
RenderedConversation TextOnlyByHand(int i) {
  features::TextNormalizeOptions norm;
  auto tok = Chars(&norm);
  auto append = [&](const std::string& s, bool loss, RenderedConversation* out) {
    std::vector<int32_t> v;
    if (!s.empty()) {
      EXPECT_OK(tok->Encode(s, &v));
    }
    out->ids.insert(out->ids.end(), v.begin(), v.end());
    out->loss.insert(out->loss.end(), v.size(), loss ? 1 : 0);
  };
  RenderedConversation r;
  for (const Turn& t : Conversation(i, true)) {
    EXPECT_FALSE(t.entry.has_audio);
    const bool assistant = t.entry.role == Role::kAssistant;
    const char* prefix = assistant ? "<as>" : t.entry.role == Role::kUser ? "<u>" : "<s>";
    append(prefix, false, &r);
    append(t.text, assistant, &r);
    append(assistant ? "||" : "|", assistant, &r);
  }
  return r;
}

class ConversationLoaderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new sluice::testing::TempDir();
    WriteConversations(dir_->Join("data"), false);
    sluice::testing::WriteFile(dir_->Join("template.json"), kTemplate);
    for (int i = 0; i < kRecords; ++i) expected_.push_back(Expected(i));
  }
  static void TearDownTestSuite() { delete dir_; }

  static LoaderOptions Options() {
    LoaderOptions o;
    o.threads = 2;
    o.seed = 5;
    o.batching.shuffle_window = 8;
    o.packing.seq_len = kSeqLen;
    o.packing.batch_size = 2;
    o.packing.shuffle_window = 4;
    o.packing.chunk_tokens = 300;
    o.packing.pack_mode = PackMode::kBestFit;
    o.packing.fit_window = 12;
    o.packing.split_long = false;
    o.packing.too_long = TooLong::kSkip;
    o.conversation.chat_template = dir_->Join("template.json");
    o.conversation.encoder_frames = "fastconformer";
    return o;
  }

  // Checks every row of `b` against the renderings; counts the conversations of its rows that
  // are not repeats (sequence < fit_rows).
  static void CheckBatch(const Batch& b, uint64_t fit_rows, std::map<int64_t, int>* seen,
                         const std::vector<RenderedConversation>& renderings = expected_) {
    const size_t L = static_cast<size_t>(b.seq_len());
    ASSERT_EQ(L, kSeqLen);
    for (size_t row = 0; row < b.size(); ++row) {
      const int32_t* ids = b.tokens() + row * (L + 1);
      const int32_t* pos = b.positions() + row * L;
      const int64_t* doc = b.doc_ids() + row * L;
      const uint8_t* mask = b.loss_mask() + row * L;
      size_t c = 0;
      while (c < L && doc[c] >= 0) {
        const int64_t r = doc[c];
        ASSERT_LT(r, kRecords);
        const RenderedConversation& want = renderings[r];
        const size_t n = want.ids.size();
        ASSERT_LE(c + n, L) << "conversation " << r << " is over the row's budget";
        for (size_t k = 0; k < n; ++k) {
          ASSERT_EQ(doc[c + k], r) << "conversation " << r << " cut at " << k;
          ASSERT_EQ(ids[c + k], want.ids[k]) << "conversation " << r << " id " << k;
          ASSERT_EQ(pos[c + k], static_cast<int32_t>(k));
          ASSERT_EQ(mask[c + k], k + 1 < n && want.loss[k + 1]) << "conversation " << r << " " << k;
        }
        if (b.sequences()[row] < fit_rows) ++(*seen)[r];
        c += n;
      }
      for (size_t k = c; k < L; ++k) {
        ASSERT_EQ(doc[k], -1);
        ASSERT_EQ(ids[k], 0);
        ASSERT_EQ(mask[k], 0);
      }
    }
    ASSERT_EQ(b.cu_seqlens().back(), static_cast<int32_t>(b.size() * L));
  }

  static sluice::testing::TempDir* dir_;
  static std::vector<RenderedConversation> expected_;
};
sluice::testing::TempDir* ConversationLoaderTest::dir_ = nullptr;
std::vector<RenderedConversation> ConversationLoaderTest::expected_;

TEST_F(ConversationLoaderTest, RowsHoldEveryConversationOnceAsTheTemplateRendersIt) {
  LoaderOptions o = Options();
  o.world = 2;
  std::map<int64_t, int> seen;
  std::vector<size_t> batches;
  for (int rank = 0; rank < 2; ++rank) {
    o.rank = rank;
    std::unique_ptr<Loader> l;
    ASSERT_OK(Loader::Open(dir_->Join("data"), o, &l));
    ASSERT_OK(l->Start(0));
    const EpochPlan& plan = ImplOf(*l).plan();
    EXPECT_EQ(plan.skipped_documents, 1u);
    EXPECT_EQ(plan.skipped_tokens, expected_[kLong].ids.size());
    const Batch* b;
    Status st;
    size_t n = 0;
    while ((st = l->Next(&b)).ok() && b != nullptr) {
      CheckBatch(*b, plan.fit_rows, &seen);
      ++n;
    }
    ASSERT_OK(st);
    batches.push_back(n);
  }
  EXPECT_EQ(batches[0], batches[1]);
  for (int i = 0; i < kRecords; ++i) EXPECT_EQ(seen[i], i == kLong ? 0 : 1) << "conversation " << i;
}

TEST_F(ConversationLoaderTest, ResumesMidEpochExactly) {
  const LoaderOptions o = Options();
  std::unique_ptr<Loader> l;
  ASSERT_OK(Loader::Open(dir_->Join("data"), o, &l));
  ASSERT_OK(l->Start(1));
  std::vector<uint64_t> all;
  const Batch* b;
  ResumeState at;
  while (l->Next(&b).ok() && b != nullptr) {
    all.push_back(DigestOf(*b));
    if (all.size() == 3) at = l->state();
  }
  ASSERT_GT(all.size(), 4u);
  std::unique_ptr<Loader> r;
  ASSERT_OK(Loader::Open(dir_->Join("data"), o, &r));
  ASSERT_OK(r->Start(at));
  std::vector<uint64_t> rest;
  while (r->Next(&b).ok() && b != nullptr) rest.push_back(DigestOf(*b));
  EXPECT_EQ(rest, std::vector<uint64_t>(all.begin() + 3, all.end()));
}

// 2 ranks take 2 batches each, then 3 ranks finish the epoch (the packed path's elastic
// resume, as it is): every conversation but the too-long one exactly once.
TEST_F(ConversationLoaderTest, ElasticResumeOnThreeRanksFinishesTheEpochOnce) {
  std::map<int64_t, int> seen;
  LoaderOptions o = Options();
  o.world = 2;
  for (int rank = 0; rank < 2; ++rank) {
    o.rank = rank;
    std::unique_ptr<Loader> l;
    ASSERT_OK(Loader::Open(dir_->Join("data"), o, &l));
    ASSERT_OK(l->Start(2));
    const uint64_t fit_rows = ImplOf(*l).plan().fit_rows;
    const Batch* b;
    for (int j = 0; j < 2; ++j) {
      ASSERT_OK(l->Next(&b));
      ASSERT_NE(b, nullptr);
      CheckBatch(*b, fit_rows, &seen);
    }
  }
  ResumeState at;
  at.epoch = 2;
  at.batches = 2;
  at.world = 2;
  o.world = 3;
  std::vector<size_t> batches;
  for (int rank = 0; rank < 3; ++rank) {
    o.rank = rank;
    std::unique_ptr<Loader> l;
    ASSERT_OK(Loader::Open(dir_->Join("data"), o, &l));
    ASSERT_OK(l->Start(at));
    const uint64_t fit_rows = ImplOf(*l).plan().fit_rows;
    const Batch* b;
    Status st;
    size_t n = 0;
    while ((st = l->Next(&b)).ok() && b != nullptr) {
      CheckBatch(*b, fit_rows, &seen);
      ++n;
    }
    ASSERT_OK(st);
    batches.push_back(n);
  }
  EXPECT_EQ(batches[0], batches[1]);
  EXPECT_EQ(batches[1], batches[2]);
  for (int i = 0; i < kRecords; ++i) EXPECT_EQ(seen[i], i == kLong ? 0 : 1) << "conversation " << i;
}

TEST_F(ConversationLoaderTest, OptionsThatDoNotApplyAreRefused) {
  auto refused = [&](const std::string& dir, const LoaderOptions& o, const std::string& what) {
    std::unique_ptr<Loader> l;
    const Status st = Loader::Open(dir, o, &l);
    EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
    EXPECT_NE(st.message().find(what), std::string::npos) << st.message();
  };
  LoaderOptions o = Options();
  o.conversation.chat_template.clear();
  refused(dir_->Join("data"), o, "HINT: --chat-template template.json --encoder-frames");
  o = Options();
  o.packing.split_long = true;
  refused(dir_->Join("data"), o, "HINT: --split-long false");
  // seq_len 0 is no refusal: a row per conversation, padded (PaddedTwoDimensionalBuckets...).
  // The other batching's options are refused, not ignored.
  o = Options();
  o.batching.bucket_2d = true;
  refused(dir_->Join("data"), o, "HINT: --seq-len 0 for padded batches");
  o = Options();
  o.batching.max_padded_sum = 4096;
  refused(dir_->Join("data"), o, "HINT: --seq-len 0 for padded batches");
  o = Options();
  o.packing.seq_len = 0;
  o.packing.balance_ranks = true;
  refused(dir_->Join("data"), o, "HINT: --seq-len N, or leave out --balance-ranks");
  o = Options();
  o.conversation.encoder_frames = "nosuchpreset";
  refused(dir_->Join("data"), o, "encoder_frames: ");
  // A text dataset with conversation options: they would be ignored.
  std::filesystem::create_directories(dir_->Join("text"));
  loader::testing::WriteTokenDataset(dir_->Join("text"), 20);
  refused(dir_->Join("text"), Options(), "are for conversation datasets");
}

// The run record (LoaderConfigJson of the resolved options) names the template and the encoder
// spec by what they mean: an edit in place is another run, a copy elsewhere or a preset spelt as
// its JSON spec the same one.
TEST_F(ConversationLoaderTest, TheRunRecordNamesTemplateAndSpecByContentNotPath) {
  auto config = [&](const LoaderOptions& o) {
    std::unique_ptr<Loader> l;
    EXPECT_OK(Loader::Open(dir_->Join("data"), o, &l));
    return l ? LoaderConfigJson(l->options(), 16000) : nlohmann::json();
  };
  const std::string path = dir_->Join("edited.json");
  sluice::testing::WriteFile(path, kTemplate);
  LoaderOptions o = Options();
  o.conversation.chat_template = path;
  const nlohmann::json before = config(o);
  ASSERT_TRUE(before.contains("conversation")) << before.dump();

  std::filesystem::create_directories(dir_->Join("elsewhere"));
  sluice::testing::WriteFile(dir_->Join("elsewhere/t.json"), kTemplate);
  LoaderOptions moved = o;
  moved.conversation.chat_template = dir_->Join("elsewhere/t.json");
  std::string where;
  EXPECT_EQ(config(moved), before) << FirstDifference(config(moved), before, "before", &where);

  sluice::testing::WriteFile(dir_->Join("fastconformer.json"),
                             R"({"sample_rate": 16000, "frame_length": 400, "frame_shift": 160,
                                 "framing": "center", "drop_last_frame": true,
                                 "stages": [{"type": "conv", "kernel": 3, "stride": 2, "padding": 1},
                                            {"type": "conv", "kernel": 3, "stride": 2, "padding": 1},
                                            {"type": "conv", "kernel": 3, "stride": 2, "padding": 1}]})");
  LoaderOptions spec = o;
  spec.conversation.encoder_frames = dir_->Join("fastconformer.json");
  EXPECT_EQ(config(spec), before) << FirstDifference(config(spec), before, "before", &where);
  spec.conversation.encoder_frames = "whisper";
  EXPECT_NE(config(spec), before);

  // The assistant's end of turn changes from "||" to "|": other loss targets, another run.
  std::string edited = kTemplate;
  edited.replace(edited.find("\"||\""), 4, "\"|\"");
  sluice::testing::WriteFile(path, edited);
  const nlohmann::json after = config(o);
  EXPECT_NE(after, before);
  EXPECT_NE(FirstDifference(after, before, "before", &where), "");
  EXPECT_EQ(where, "/conversation/chat_template_content");

  // Other datasets' records have no conversation entry, as before.
  EXPECT_FALSE(LoaderConfigJson(LoaderOptions(), 0).contains("conversation"));
}

// The conversation columns of LoaderOptions::filter, computed here from the turns as written:
// the epoch holds exactly the conversations the same conditions keep, each reason counts the
// conversations it left out first, and the columns are refused for a dataset of another kind.
TEST_F(ConversationLoaderTest, RatioFiltersKeepWhatTheTurnsAsWrittenKeep) {
  features::TextNormalizeOptions norm;
  auto tok = Chars(&norm);
  features::EncoderFramesSpec spec;
  ASSERT_OK(features::EncoderFramesPreset("fastconformer", &spec));
  struct Columns {
    double audio_seconds = 0, text_tokens = 0, encoder_frames = 0, llm_tokens = 0;
    double per_second() const { return text_tokens / audio_seconds; }
  };
  std::vector<Columns> by_hand(kRecords);
  std::vector<double> rates, seconds, llm, frames;
  for (int i = 0; i < kRecords; ++i) {
    Columns& c = by_hand[i];
    for (const Turn& t : Conversation(i, false)) {
      if (t.entry.role == Role::kAssistant) {
        std::vector<int32_t> ids;
        ASSERT_OK(tok->Encode(t.text, &ids));
        c.text_tokens += static_cast<double>(ids.size());
      }
      if (!t.entry.has_audio) continue;
      c.audio_seconds += static_cast<double>(t.samples.size()) / 16000.0;
      c.encoder_frames += features::EncoderFrames(spec, t.samples.size());
    }
    c.llm_tokens = static_cast<double>(expected_[i].ids.size());
    rates.push_back(c.per_second());
    seconds.push_back(c.audio_seconds);
    llm.push_back(c.llm_tokens);
    frames.push_back(c.encoder_frames);
  }
  for (auto* v : {&rates, &seconds, &llm, &frames}) std::sort(v->begin(), v->end());
  // Thresholds between two records' values, so no rounding decides a record.
  const double max_rate = (rates[kRecords * 3 / 4] + rates[kRecords * 3 / 4 + 1]) / 2;
  const double min_seconds = (seconds[kRecords / 5] + seconds[kRecords / 5 + 1]) / 2;
  const int max_llm = static_cast<int>(llm[kRecords * 9 / 10]);
  const int min_frames = static_cast<int>(frames[kRecords / 2]);
  std::vector<uint64_t> want_counts(4, 0);
  std::map<int64_t, int> want;
  for (int i = 0; i < kRecords; ++i) {
    const Columns& c = by_hand[i];
    if (!(c.per_second() < max_rate)) {
      ++want_counts[0];
    } else if (!(c.audio_seconds > min_seconds)) {
      ++want_counts[1];
    } else if (!(c.llm_tokens <= max_llm)) {
      ++want_counts[2];
    } else if (!(c.encoder_frames >= min_frames && c.text_tokens > 0)) {
      ++want_counts[3];
    } else {
      want[i] = 1;
    }
  }
  for (uint64_t n : want_counts) ASSERT_GT(n, 0u) << "every reason must leave one out";
  const std::string rate = std::to_string(max_rate), sec = std::to_string(min_seconds);
  LoaderOptions o = Options();
  o.filter = "tokens_per_second < " + rate + " and audio_seconds > " + sec +
             " and llm_tokens <= " + std::to_string(max_llm) +
             " and (encoder_frames >= " + std::to_string(min_frames) + " and text_tokens > 0)";
  std::unique_ptr<Loader> l;
  ASSERT_OK(Loader::Open(dir_->Join("data"), o, &l));
  ASSERT_OK(l->Start(0));
  const EpochPlan& plan = ImplOf(*l).plan();
  EXPECT_EQ(plan.skipped_documents, 0u);  // the too-long one is filtered out first
  std::map<int64_t, int> seen;
  const Batch* b;
  Status st;
  while ((st = l->Next(&b)).ok() && b != nullptr) CheckBatch(*b, plan.fit_rows, &seen);
  ASSERT_OK(st);
  EXPECT_EQ(seen, want);
  const EpochStats stats = l->stats();
  ASSERT_EQ(stats.filtered.size(), 4u);
  EXPECT_EQ(stats.filtered[0].reason, "tokens_per_second < " + rate);
  for (size_t k = 0; k < 4; ++k)
    EXPECT_EQ(stats.filtered[k].records, want_counts[k]) << stats.filtered[k].reason;
  EXPECT_EQ(stats.filtered_records,
            want_counts[0] + want_counts[1] + want_counts[2] + want_counts[3]);

  // Text records have no turns: their filter may not name these columns.
  std::filesystem::create_directories(dir_->Join("text_for_filter"));
  loader::testing::WriteTokenDataset(dir_->Join("text_for_filter"), 20);
  LoaderOptions t;
  t.packing.seq_len = 64;
  t.filter = "llm_tokens < 100";
  const Status refused = Loader::Open(dir_->Join("text_for_filter"), t, &l);
  EXPECT_TRUE(refused.IsInvalidArgument()) << refused.ToString();
  EXPECT_NE(refused.message().find("unknown column 'llm_tokens'"), std::string::npos)
      << refused.message();
}

// Padded conversations (seq_len 0) in 2-D buckets on (encoder frames, LLM tokens): a row per
// conversation holding its rendering's ids, zero-padded; every conversation once per epoch over
// two ranks; each batch within max_padded_sum (rows x (longest frames + longest tokens)) unless it
// is one conversation; the same batches after a mid-epoch resume.
TEST_F(ConversationLoaderTest, PaddedTwoDimensionalBucketsHoldEveryConversationOnceWithinBudget) {
  features::EncoderFramesSpec spec;
  ASSERT_OK(features::EncoderFramesPreset("fastconformer", &spec));
  std::vector<uint64_t> frames(kRecords, 0);
  for (int i = 0; i < kRecords; ++i)
    for (const Turn& t : Conversation(i, false))
      if (t.entry.has_audio) frames[i] += features::EncoderFrames(spec, t.samples.size());
  constexpr uint64_t kBudget = 1200;
  LoaderOptions o = Options();
  o.packing = PackingOptions();  // seq_len 0: padded
  o.batching.bucket_2d = true;
  o.batching.num_buckets = 3;
  o.batching.max_frames = 0;
  o.batching.max_padded_sum = kBudget;
  o.world = 2;
  std::map<int64_t, int> seen;
  size_t batches_of_rank0 = 0;
  for (int rank = 0; rank < 2; ++rank) {
    o.rank = rank;
    std::unique_ptr<Loader> l;
    ASSERT_OK(Loader::Open(dir_->Join("data"), o, &l));
    ASSERT_OK(l->Start(0));
    const EpochPlan& plan = ImplOf(*l).plan();
    EXPECT_FALSE(plan.token_bucket_bounds.empty());
    const Batch* b;
    Status st;
    size_t n = 0;
    while ((st = l->Next(&b)).ok() && b != nullptr) {
      ++n;
      uint64_t longest_frames = 0, longest_tokens = 0;
      for (size_t row = 0; row < b->size(); ++row) {
        const int64_t r = static_cast<int64_t>(b->record_ids()[row]);
        ASSERT_LT(r, kRecords);
        if (plan.batches[n - 1].repeated == 0) ++seen[r];
        const std::vector<int32_t>& want = expected_[r].ids;
        ASSERT_EQ(b->token_lengths()[row], static_cast<int32_t>(want.size())) << "record " << r;
        for (size_t k = 0; k < static_cast<size_t>(b->max_tokens()); ++k)
          ASSERT_EQ(b->tokens()[row * b->max_tokens() + k], k < want.size() ? want[k] : 0)
              << "record " << r << " id " << k;
        longest_frames = std::max(longest_frames, frames[r]);
        longest_tokens = std::max<uint64_t>(longest_tokens, want.size());
      }
      ASSERT_EQ(static_cast<uint64_t>(b->max_tokens()), longest_tokens);
      if (b->size() > 1) {
        EXPECT_LE(b->size() * (longest_frames + longest_tokens), kBudget);
      }
    }
    ASSERT_OK(st);
    if (rank == 0) batches_of_rank0 = n;
    EXPECT_EQ(n, batches_of_rank0);
  }
  for (int i = 0; i < kRecords; ++i) EXPECT_EQ(seen[i], 1) << "conversation " << i;

  o.world = 1;
  o.rank = 0;
  std::unique_ptr<Loader> l;
  ASSERT_OK(Loader::Open(dir_->Join("data"), o, &l));
  ASSERT_OK(l->Start(1));
  std::vector<uint64_t> all;
  const Batch* b;
  ResumeState at;
  while (l->Next(&b).ok() && b != nullptr) {
    all.push_back(DigestOf(*b));
    if (all.size() == 3) at = l->state();
  }
  ASSERT_GT(all.size(), 4u);
  std::unique_ptr<Loader> r;
  ASSERT_OK(Loader::Open(dir_->Join("data"), o, &r));
  ASSERT_OK(r->Start(at));
  std::vector<uint64_t> rest;
  while (r->Next(&b).ok() && b != nullptr) rest.push_back(DigestOf(*b));
  EXPECT_EQ(rest, std::vector<uint64_t>(all.begin() + 3, all.end()));
}

// balance_ranks through the Loader: a mid-epoch resume of balanced ranks gives the same batches,
// and the plan's stated spread reaches EpochStats.
TEST_F(ConversationLoaderTest, BalancedRanksResumeMidEpochExactly) {
  LoaderOptions o = Options();
  o.packing.balance_ranks = true;
  o.world = 2;
  o.rank = 1;
  std::unique_ptr<Loader> l;
  ASSERT_OK(Loader::Open(dir_->Join("data"), o, &l));
  ASSERT_OK(l->Start(0));
  std::vector<uint64_t> all;
  const Batch* b;
  ResumeState at;
  while (l->Next(&b).ok() && b != nullptr) {
    all.push_back(DigestOf(*b));
    if (all.size() == 1) at = l->state();
  }
  ASSERT_GT(all.size(), 2u);
  EXPECT_EQ(l->stats().rank_token_spread, ImplOf(*l).plan().rank_token_spread);
  EXPECT_LE(l->stats().rank_token_spread, kSeqLen);
  std::unique_ptr<Loader> r;
  ASSERT_OK(Loader::Open(dir_->Join("data"), o, &r));
  ASSERT_OK(r->Start(at));
  std::vector<uint64_t> rest;
  while (r->Next(&b).ok() && b != nullptr) rest.push_back(DigestOf(*b));
  EXPECT_EQ(rest, std::vector<uint64_t>(all.begin() + 1, all.end()));
}

// Instruction data: conversations without an audio turn need a template alone (no encoder spec,
// no placeholder), and carry loss exactly on the assistant's targets.
TEST_F(ConversationLoaderTest, TextOnlyConversationsNeedOnlyATemplate) {
  const std::string data = dir_->Join("instructions");
  WriteConversations(data, true);
  sluice::testing::WriteFile(dir_->Join("text_template.json"), kTextTemplate);
  std::vector<RenderedConversation> want;
  for (int i = 0; i < kRecords; ++i) want.push_back(TextOnlyByHand(i));
  LoaderOptions o = Options();
  o.conversation.chat_template = dir_->Join("text_template.json");
  o.conversation.encoder_frames.clear();
  std::unique_ptr<Loader> l;
  ASSERT_OK(Loader::Open(data, o, &l));
  ASSERT_OK(l->Start(0));
  const EpochPlan& plan = ImplOf(*l).plan();
  EXPECT_EQ(plan.skipped_documents, 1u);
  std::map<int64_t, int> seen;
  const Batch* b;
  Status st;
  uint64_t targets = 0;
  while ((st = l->Next(&b)).ok() && b != nullptr) {
    CheckBatch(*b, plan.fit_rows, &seen, want);
    for (size_t k = 0; k < b->size() * b->seq_len(); ++k) targets += b->loss_mask()[k];
  }
  ASSERT_OK(st);
  EXPECT_GT(targets, 0u);
  for (int i = 0; i < kRecords; ++i) EXPECT_EQ(seen[i], i == kLong ? 0 : 1) << "conversation " << i;

  // With audio turns, both stay required.
  auto refused = [&](const LoaderOptions& o, const std::string& what) {
    std::unique_ptr<Loader> l;
    const Status st = Loader::Open(dir_->Join("data"), o, &l);
    EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
    EXPECT_NE(st.message().find(what), std::string::npos) << st.message();
  };
  refused(o, "conversation.encoder_frames");
  o.conversation.encoder_frames = "fastconformer";
  refused(o, "placeholder");
}

// Padded rows (seq_len 0) carry the packed rows' loss mask, [rows, longest]: 1 on input k of a
// conversation when its target k + 1 carries loss, which the template gives the assistant's
// turns alone (TextOnlyByHand spells that out per role); 0 on the last id and on padding. The
// audio dataset's placeholders and prefixes carry none either (its renderings' loss).
TEST_F(ConversationLoaderTest, PaddedRowsLossMaskIsTheAssistantsTargets) {
  const std::string data = dir_->Join("instructions_padded");
  WriteConversations(data, true);
  sluice::testing::WriteFile(dir_->Join("text_template_padded.json"), kTextTemplate);
  std::vector<RenderedConversation> by_hand;
  for (int i = 0; i < kRecords; ++i) by_hand.push_back(TextOnlyByHand(i));
  auto check = [&](const std::string& dir, LoaderOptions o,
                   const std::vector<RenderedConversation>& want) {
    o.packing = PackingOptions();  // seq_len 0: padded
    o.batching.max_frames = 0;
    o.batching.max_batch_size = 4;
    std::unique_ptr<Loader> l;
    ASSERT_OK(Loader::Open(dir, o, &l));
    ASSERT_OK(l->Start(0));
    const Batch* b;
    Status st;
    uint64_t targets = 0, rows = 0;
    while ((st = l->Next(&b)).ok() && b != nullptr) {
      ASSERT_NE(b->loss_mask(), nullptr);
      const size_t width = static_cast<size_t>(b->max_tokens());
      for (size_t row = 0; row < b->size(); ++row, ++rows) {
        const int64_t r = static_cast<int64_t>(b->record_ids()[row]);
        const RenderedConversation& w = want[r];
        const size_t n = w.ids.size();
        ASSERT_EQ(b->token_lengths()[row], static_cast<int32_t>(n));
        const uint8_t* mask = b->loss_mask() + row * width;
        for (size_t k = 0; k < width; ++k) {
          ASSERT_EQ(mask[k], k + 1 < n && w.loss[k + 1]) << "conversation " << r << " " << k;
          targets += mask[k];
        }
      }
    }
    ASSERT_OK(st);
    EXPECT_EQ(rows, static_cast<uint64_t>(kRecords));
    EXPECT_GT(targets, 0u);
  };
  LoaderOptions o = Options();
  o.conversation.chat_template = dir_->Join("text_template_padded.json");
  o.conversation.encoder_frames.clear();
  check(data, o, by_hand);
  check(dir_->Join("data"), Options(), expected_);
}

}  // namespace
}  // namespace sluice::loader
