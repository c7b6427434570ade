// The audio of conversation batches (loader/conversation_audio.h): every audio turn of a batch's
// rows, in row order then span order, with its placeholder span (whose ids are the placeholder
// and whose length is the encoder frames of the turn's samples), its features equal to a direct
// decode of the record (shards/ calls) and feature computation (features/ calls), its length,
// zero padding; exactly the same after a mid-epoch resume and after an elastic resume on 3 ranks;
// nothing allocated while batches flow.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "assert_ok.h"
#include "base/random.h"
#include "conversation_dataset.h"
#include "features/fbank.h"
#include "features/half.h"
#include "features/pcm.h"
#include "loader/digest.h"
#include "loader/feature_args.h"
#include "loader/loader_impl.h"
#include "shards/checksum.h"
#include "shards/dataset.h"
#include "shards/manifest.h"
#include "test_dataset.h"
#include "test_util.h"

namespace sluice::loader {
namespace {

using namespace conversation_testing;  // NOLINT: the dataset's helpers

constexpr int32_t kPlaceholder = 77;  // kTemplate's

// Each audio turn of conversation r as decoded from its record, independently of the loader:
// (samples, features) in turn order.
struct TurnAudio {
  uint32_t samples = 0;
  std::vector<float> features;  // frames x dim
};

class ConversationAudioTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new sluice::testing::TempDir();
    WriteConversations(dir_->Join("data"), false);
    sluice::testing::WriteFile(dir_->Join("template.json"), kTemplate);
  }
  static void TearDownTestSuite() { delete dir_; }

  static LoaderOptions Options() {
    LoaderOptions o;
    o.threads = 2;
    o.seed = 5;
    o.batching.shuffle_window = 8;
    o.packing.seq_len = 200;
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

  // Record r's audio turns: read with shards::Dataset, split with DecodeConversation, features
  // by a FbankComputer of the default options (or the samples, `raw`).
  static const std::vector<TurnAudio>& Direct(uint64_t r, bool raw, uint64_t seed, uint64_t epoch) {
    static std::map<std::tuple<uint64_t, bool, uint64_t, uint64_t>, std::vector<TurnAudio>> cache;
    std::vector<TurnAudio>& out = cache[{r, raw, seed, epoch}];
    if (!out.empty()) return out;
    std::unique_ptr<shards::Dataset> d;
    EXPECT_OK(shards::Dataset::Open(dir_->Join("data"), shards::ReadOptions(), &d));
    size_t shard = 0;
    uint64_t local = r;
    while (local >= d->shard(shard).num_records()) local -= d->shard(shard++).num_records();
    std::string payload;
    EXPECT_OK(d->shard(shard).ReadRecord(local, &payload));
    shards::RecordView rv;
    EXPECT_OK(shards::ParseRecord(payload.data(), payload.size(), "direct", &rv));
    std::vector<shards::ConversationTurn> turns;
    EXPECT_OK(shards::DecodeConversation(rv, "direct", &turns));
    const shards::FieldView* audio = rv.Find(shards::FieldType::kAudioPcm16);
    EXPECT_NE(audio, nullptr);
    std::vector<int16_t> pcm(audio->size / 2);
    std::memcpy(pcm.data(), audio->data, audio->size);
    FeatureArgs args;
    args.kind = "fbank";
    FeatureConfig config;
    EXPECT_OK(MakeFeatureConfig(args, 16000, &config));
    features::FbankComputer fbank(config.fbank);
    features::Workspace ws;
    for (size_t t = 0; t < turns.size(); ++t) {
      if (!turns[t].entry.has_audio) continue;
      TurnAudio a;
      a.samples = turns[t].entry.samples;
      std::vector<float> x(a.samples);
      features::Pcm16ToFloat(pcm.data() + turns[t].first_sample, a.samples, x.data(), 1.0f);
      if (raw) {
        a.features = x;
      } else {
        fbank.Compute(x.data(), x.size(), &ws, &a.features, Mix64(StreamKey(seed, epoch, r) + t));
      }
      out.push_back(std::move(a));
    }
    return out;
  }

  // Checks audio slot `a` of `b` against turn `t` of the conversation in columns [c, c + n) of
  // row `row`, whose ids are `ids`: its span (in the conversation, after the row's previous
  // span, placeholders, the turn's encoder frames), its length and its features.
  static void CheckTurn(const Batch& b, size_t a, size_t row, size_t c, size_t n,
                        const int32_t* ids, const TurnAudio& t, int dim, int64_t r) {
    features::EncoderFramesSpec spec;
    ASSERT_OK(features::EncoderFramesPreset("fastconformer", &spec));
    const float* feats = static_cast<const float*>(b.audio_features());
    const size_t slot = static_cast<size_t>(b.audio_frames()) * dim;
    ASSERT_LT(a, b.num_audio()) << "batch " << b.index() << ": conversation " << r;
    const int32_t* span = b.audio_spans().data() + 3 * a;
    EXPECT_EQ(span[0], static_cast<int32_t>(row));
    EXPECT_GE(span[1], static_cast<int32_t>(c));
    EXPECT_LE(span[1] + span[2], static_cast<int32_t>(c + n)) << "span outside its conversation";
    EXPECT_EQ(span[2], features::EncoderFrames(spec, t.samples)) << "conversation " << r;
    for (int32_t k = 0; k < span[2]; ++k) {
      ASSERT_EQ(ids[span[1] + k], kPlaceholder);
    }
    if (a > 0 && b.audio_spans()[3 * (a - 1)] == span[0]) {
      EXPECT_LT(b.audio_spans()[3 * (a - 1) + 1], span[1]) << "spans out of order";
    }
    const int32_t frames = static_cast<int32_t>(t.features.size() / dim);
    EXPECT_EQ(b.audio_lengths()[a], frames) << "conversation " << r;
    EXPECT_GT(frames, 0);
    for (size_t v = 0; v < t.features.size(); ++v) {
      ASSERT_EQ(feats[a * slot + v], t.features[v]) << "conversation " << r << " value " << v;
    }
    for (size_t v = t.features.size(); v < slot; ++v) {
      ASSERT_EQ(feats[a * slot + v], 0.0f) << "padding of conversation " << r;
    }
  }

  // Checks the audio of packed batch `b` against the direct decodes; counts each conversation's
  // audio turns it holds (rows past fit_rows repeat earlier ones: not counted).
  static void CheckAudio(const Batch& b, uint64_t fit_rows, bool raw, uint64_t seed,
                         std::map<int64_t, int>* seen) {
    const size_t L = static_cast<size_t>(b.seq_len());
    const int dim = raw ? 1 : 80;
    ASSERT_EQ(b.audio_dim(), b.num_audio() > 0 ? dim : 0);
    // The audio expected: each row's conversations in column order, their audio turns in order.
    size_t a = 0;
    for (size_t row = 0; row < b.size(); ++row) {
      const int64_t* doc = b.doc_ids() + row * L;
      for (size_t c = 0; c < L && doc[c] >= 0;) {
        const int64_t r = doc[c];
        size_t n = 0;
        while (c + n < L && doc[c + n] == r) ++n;
        const std::vector<TurnAudio>& want = Direct(r, raw, seed, b.epoch());
        for (const TurnAudio& t : want) {
          CheckTurn(b, a, row, c, n, b.tokens() + row * (L + 1), t, dim, r);
          if (::testing::Test::HasFatalFailure()) return;
          ++a;
        }
        if (b.sequences()[row] < fit_rows) (*seen)[r] += static_cast<int>(want.size());
        c += n;
      }
    }
    EXPECT_EQ(a, b.num_audio()) << "batch " << b.index();
  }

  // The same for padded batch `b`: row i is conversation record_ids[i] at column 0 (none for a
  // row cleared after a corrupt block: no key); counts the audio turns of the rows that are no
  // repeats (`repeated`: the plan's batch repeats them).
  static void CheckPaddedAudio(const Batch& b, bool repeated, uint64_t seed,
                               std::map<int64_t, int>* seen) {
    ASSERT_EQ(b.seq_len(), 0);
    ASSERT_EQ(b.audio_dim(), b.num_audio() > 0 ? 80 : 0);
    const size_t width = static_cast<size_t>(b.max_tokens());
    size_t a = 0;
    for (size_t row = 0; row < b.size(); ++row) {
      if (b.keys()[row].empty()) continue;
      const int64_t r = static_cast<int64_t>(b.record_ids()[row]);
      const std::vector<TurnAudio>& want = Direct(r, false, seed, b.epoch());
      for (const TurnAudio& t : want) {
        CheckTurn(b, a, row, 0, static_cast<size_t>(b.token_lengths()[row]),
                  b.tokens() + row * width, t, 80, r);
        if (::testing::Test::HasFatalFailure()) return;
        ++a;
      }
      if (!repeated) (*seen)[r] += static_cast<int>(want.size());
    }
    EXPECT_EQ(a, b.num_audio()) << "batch " << b.index();
  }

  // The audio of the batches a Loader gives from `start` on, as a hash per batch.
  static std::vector<uint64_t> AudioHashes(const LoaderOptions& o, const ResumeState& start,
                                           size_t take = ~size_t{0}) {
    std::unique_ptr<Loader> l;
    EXPECT_OK(Loader::Open(dir_->Join("data"), o, &l));
    EXPECT_OK(l->Start(start));
    std::vector<uint64_t> out;
    const Batch* b;
    while (out.size() < take && l->Next(&b).ok() && b != nullptr) {
      std::string bytes(static_cast<const char*>(b->audio_features()), b->audio_features_bytes());
      bytes.append(reinterpret_cast<const char*>(b->audio_lengths().data()),
                   b->audio_lengths().size_bytes());
      bytes.append(reinterpret_cast<const char*>(b->audio_spans().data()),
                   b->audio_spans().size_bytes());
      out.push_back(shards::Checksum(bytes.data(), bytes.size()));
    }
    return out;
  }

  static sluice::testing::TempDir* dir_;
};
sluice::testing::TempDir* ConversationAudioTest::dir_ = nullptr;

ResumeState EpochStart(uint64_t epoch) {
  ResumeState s;
  s.epoch = epoch;
  return s;
}

// Conversation i's audio turns as written.
int AudioTurns(int i) {
  int n = 0;
  for (const Turn& t : Conversation(i, false)) n += t.entry.has_audio;
  return n;
}

TEST_F(ConversationAudioTest, EverySpanHasItsTurnsFeaturesInRowThenSpanOrder) {
  LoaderOptions o = Options();
  o.world = 2;
  std::map<int64_t, int> seen;
  for (int rank = 0; rank < 2; ++rank) {
    o.rank = rank;
    std::unique_ptr<Loader> l;
    ASSERT_OK(Loader::Open(dir_->Join("data"), o, &l));
    ASSERT_OK(l->Start(0));
    const uint64_t fit_rows = ImplOf(*l).plan().fit_rows;
    const Batch* b;
    Status st;
    while ((st = l->Next(&b)).ok() && b != nullptr) CheckAudio(*b, fit_rows, false, o.seed, &seen);
    ASSERT_OK(st);
    EXPECT_EQ(l->stats().pool_allocations, 0u);  // the pool was sized from the plan
  }
  int two = 0;
  for (int i = 0; i < kRecords; ++i) {
    EXPECT_EQ(seen[i], i == kLong ? 0 : AudioTurns(i)) << "conversation " << i;
    two += AudioTurns(i) == 2;
  }
  EXPECT_GT(two, 2);  // conversations with two spans were there to order
}

TEST_F(ConversationAudioTest, RawSamplesWhenFeaturesAreOff) {
  LoaderOptions o = Options();
  o.kind = FeatureKind::kRaw;
  std::unique_ptr<Loader> l;
  ASSERT_OK(Loader::Open(dir_->Join("data"), o, &l));
  ASSERT_OK(l->Start(0));
  const uint64_t fit_rows = ImplOf(*l).plan().fit_rows;
  std::map<int64_t, int> seen;
  const Batch* b;
  for (int j = 0; j < 3; ++j) {
    ASSERT_OK(l->Next(&b));
    ASSERT_NE(b, nullptr);
    ASSERT_GT(b->num_audio(), 0u);
    CheckAudio(*b, fit_rows, true, o.seed, &seen);
  }
}

// The epoch's statistics count the audio the batches carry (sluice-bench's hours, real-time
// factor): the samples of every audio turn handed out, repeated rows included, and its frames.
TEST_F(ConversationAudioTest, EpochStatsCountTheAudioTurnsHandedOut) {
  std::unique_ptr<Loader> l;
  ASSERT_OK(Loader::Open(dir_->Join("data"), Options(), &l));
  ASSERT_OK(l->Start(0));
  uint64_t samples = 0, frames = 0;
  const Batch* b;
  while (l->Next(&b).ok() && b != nullptr) {
    const size_t L = static_cast<size_t>(b->seq_len());
    std::map<std::pair<int32_t, int64_t>, size_t> nth;  // (row, record) -> its audios so far
    for (size_t a = 0; a < b->num_audio(); ++a) {
      const int32_t* span = b->audio_spans().data() + 3 * a;
      const int64_t r = b->doc_ids()[static_cast<size_t>(span[0]) * L + span[1]];
      std::vector<uint32_t> turns;  // conversation r's audio turns as written
      for (const Turn& t : Conversation(static_cast<int>(r), false))
        if (t.entry.has_audio) turns.push_back(static_cast<uint32_t>(t.samples.size()));
      const size_t k = nth[{span[0], r}]++;
      ASSERT_LT(k, turns.size());
      samples += turns[k];
      frames += static_cast<uint64_t>(b->audio_lengths()[a]);
    }
  }
  ASSERT_GT(samples, 0u);
  EXPECT_DOUBLE_EQ(l->stats().audio_seconds, static_cast<double>(samples) / 16000);
  EXPECT_EQ(l->stats().frames, frames);
}

// dtype float16: the same audio as float32, converted (padding still zero).
TEST_F(ConversationAudioTest, HalfPrecisionAudioIsTheFloatAudioConverted) {
  LoaderOptions o = Options();
  std::unique_ptr<Loader> f32, f16;
  ASSERT_OK(Loader::Open(dir_->Join("data"), o, &f32));
  o.dtype = DType::kFloat16;
  ASSERT_OK(Loader::Open(dir_->Join("data"), o, &f16));
  ASSERT_OK(f32->Start(0));
  ASSERT_OK(f16->Start(0));
  const Batch *a, *h;
  size_t audios = 0;
  while (f32->Next(&a).ok() && a != nullptr) {
    ASSERT_OK(f16->Next(&h));
    ASSERT_NE(h, nullptr);
    ASSERT_EQ(h->num_audio(), a->num_audio());
    ASSERT_EQ(h->audio_frames(), a->audio_frames());
    ASSERT_EQ(h->audio_features_bytes() * 2, a->audio_features_bytes());
    const size_t n = a->audio_features_bytes() / sizeof(float);
    std::vector<uint16_t> want(n);
    features::FloatToHalf(static_cast<const float*>(a->audio_features()), n, want.data());
    ASSERT_EQ(std::memcmp(h->audio_features(), want.data(), n * sizeof(uint16_t)), 0)
        << "batch " << a->index();
    EXPECT_TRUE(
        std::equal(h->audio_spans().begin(), h->audio_spans().end(), a->audio_spans().begin()));
    audios += a->num_audio();
  }
  EXPECT_GT(audios, 0u);
}

TEST_F(ConversationAudioTest, OptionsThatWouldChangeTheFramesAreRefused) {
  auto refused = [&](const LoaderOptions& o, const std::string& what) {
    std::unique_ptr<Loader> l;
    const Status st = Loader::Open(dir_->Join("data"), o, &l);
    EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
    EXPECT_NE(st.message().find(what), std::string::npos) << st.message();
  };
  LoaderOptions o = Options();
  o.speed_perturb = true;
  refused(o, "speed_perturb");
  o = Options();  // the chain's spelling of the same
  o.waveform_augment.speed.probability = 0.5;
  refused(o, "speed_perturb");
  o = Options();  // tempo changes the length as speed does
  o.waveform_augment.tempo.probability = 0.5;
  refused(o, "tempo");
  o = Options();
  o.spec_augment = true;
  refused(o, "spec_augment");
  o = Options();
  o.kind = FeatureKind::kPrecomputed;
  refused(o, "precomputed");
}

TEST_F(ConversationAudioTest, MidEpochResumeGivesTheSameAudio) {
  const LoaderOptions o = Options();
  const std::vector<uint64_t> all = AudioHashes(o, EpochStart(1));
  ASSERT_GT(all.size(), 4u);
  ResumeState at;
  {
    std::unique_ptr<Loader> l;
    ASSERT_OK(Loader::Open(dir_->Join("data"), o, &l));
    ASSERT_OK(l->Start(1));
    const Batch* b;
    for (int j = 0; j < 3; ++j) ASSERT_OK(l->Next(&b));
    at = l->state();
  }
  EXPECT_EQ(AudioHashes(o, at), std::vector<uint64_t>(all.begin() + 3, all.end()));
}

// 2 ranks take 2 batches each, then 3 ranks finish the epoch: every conversation's audio turns
// exactly once, each equal to its direct decode.
TEST_F(ConversationAudioTest, ElasticResumeOnThreeRanksGivesEveryAudioOnce) {
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
      CheckAudio(*b, fit_rows, false, o.seed, &seen);
    }
  }
  ResumeState at;
  at.epoch = 2;
  at.batches = 2;
  at.world = 2;
  o.world = 3;
  for (int rank = 0; rank < 3; ++rank) {
    o.rank = rank;
    std::unique_ptr<Loader> l;
    ASSERT_OK(Loader::Open(dir_->Join("data"), o, &l));
    ASSERT_OK(l->Start(at));
    const uint64_t fit_rows = ImplOf(*l).plan().fit_rows;
    const Batch* b;
    Status st;
    while ((st = l->Next(&b)).ok() && b != nullptr) CheckAudio(*b, fit_rows, false, o.seed, &seen);
    ASSERT_OK(st);
    // The same rank's audio again from the same state: identical arrays.
    EXPECT_EQ(AudioHashes(o, at), AudioHashes(o, at));
  }
  for (int i = 0; i < kRecords; ++i)
    EXPECT_EQ(seen[i], i == kLong ? 0 : AudioTurns(i)) << "conversation " << i;
}

// corrupt = kSkip: a row lost with its block becomes a copy of an intact row of its batch, and
// takes that row's audio with it (slots, spans moved to its row), so every span still has its
// own audio.
TEST_F(ConversationAudioTest, ARefilledRowCarriesItsCopysAudio) {
  const std::string data = dir_->Join("corrupt");
  WriteConversations(data, false);
  shards::Manifest m;
  ASSERT_OK(shards::LoadManifest(data, &m));
  loader::testing::FlipByteInBlock(data, m.shards[0].file, 1);
  LoaderOptions o = Options();
  o.corrupt = CorruptPolicy::kSkip;
  o.packing.batch_size = 4;  // rows enough that a batch keeps an intact one
  std::unique_ptr<Loader> l;
  ASSERT_OK(Loader::Open(data, o, &l));
  ASSERT_OK(l->Start(0));
  const uint64_t fit_rows = ImplOf(*l).plan().fit_rows;
  std::map<int64_t, int> seen;
  const Batch* b;
  Status st;
  size_t skipped = 0, audio = 0;
  while ((st = l->Next(&b)).ok() && b != nullptr) {
    CheckAudio(*b, fit_rows, false, o.seed, &seen);
    skipped += b->skipped();
    audio += b->num_audio();
  }
  ASSERT_OK(st);
  EXPECT_GT(skipped, 0u);
  EXPECT_GT(audio, 0u);
}

// Padded rows (seq_len 0) in 2-D buckets: every row's audio turns in its slots, span columns in
// its own row of ids, features equal to the direct decodes, each conversation's audio once per
// epoch over two ranks, no allocation while batches flow; the same audio after a mid-epoch resume.
LoaderOptions PaddedOptions(LoaderOptions o) {
  o.packing = PackingOptions();  // seq_len 0: padded
  o.batching.bucket_2d = true;
  o.batching.num_buckets = 3;
  o.batching.max_frames = 0;
  o.batching.max_padded_sum = 1200;
  return o;
}

TEST_F(ConversationAudioTest, PaddedRowsCarryTheirAudioAndResumeExactly) {
  LoaderOptions o = PaddedOptions(Options());
  o.world = 2;
  std::map<int64_t, int> seen;
  size_t audio = 0;
  for (int rank = 0; rank < 2; ++rank) {
    o.rank = rank;
    std::unique_ptr<Loader> l;
    ASSERT_OK(Loader::Open(dir_->Join("data"), o, &l));
    ASSERT_OK(l->Start(0));
    const EpochPlan& plan = ImplOf(*l).plan();
    const Batch* b;
    Status st;
    while ((st = l->Next(&b)).ok() && b != nullptr) {
      CheckPaddedAudio(*b, plan.batches[b->index()].repeated > 0, o.seed, &seen);
      audio += b->num_audio();
    }
    ASSERT_OK(st);
    EXPECT_EQ(l->stats().pool_allocations, 0u);  // the pool was sized from the plan
  }
  EXPECT_GT(audio, 0u);
  for (int i = 0; i < kRecords; ++i) EXPECT_EQ(seen[i], AudioTurns(i)) << "conversation " << i;

  o.world = 1;
  o.rank = 0;
  const std::vector<uint64_t> all = AudioHashes(o, EpochStart(1));
  ASSERT_GT(all.size(), 4u);
  ResumeState at;
  {
    std::unique_ptr<Loader> l;
    ASSERT_OK(Loader::Open(dir_->Join("data"), o, &l));
    ASSERT_OK(l->Start(1));
    const Batch* b;
    for (int j = 0; j < 3; ++j) ASSERT_OK(l->Next(&b));
    at = l->state();
  }
  EXPECT_EQ(AudioHashes(o, at), std::vector<uint64_t>(all.begin() + 3, all.end()));
}

// corrupt = kSkip on padded rows: a lost row copies an intact row of its batch with its audio.
TEST_F(ConversationAudioTest, APaddedRefilledRowCarriesItsCopysAudio) {
  const std::string data = dir_->Join("corrupt_padded");
  WriteConversations(data, false);
  shards::Manifest m;
  ASSERT_OK(shards::LoadManifest(data, &m));
  loader::testing::FlipByteInBlock(data, m.shards[0].file, 1);
  LoaderOptions o = PaddedOptions(Options());
  o.corrupt = CorruptPolicy::kSkip;
  std::unique_ptr<Loader> l;
  ASSERT_OK(Loader::Open(data, o, &l));
  ASSERT_OK(l->Start(0));
  std::map<int64_t, int> seen;
  const Batch* b;
  Status st;
  size_t copied = 0, audio = 0;
  while ((st = l->Next(&b)).ok() && b != nullptr) {
    CheckPaddedAudio(*b, true, o.seed, &seen);
    // Lost rows with an intact row to copy (the others are cleared).
    if (b->skipped() > 0 && b->skipped() < b->size()) copied += b->skipped();
    audio += b->num_audio();
  }
  ASSERT_OK(st);
  EXPECT_GT(copied, 0u);
  EXPECT_GT(audio, 0u);
}

}  // namespace
}  // namespace sluice::loader
