// The waveform augmentation chain in the loader: applied to each record as the kernels apply it,
// keyed by (seed, epoch, record) whatever the threads, the resume point or the rank split; its
// clips' datasets recorded by content in the resolved options; misconfigurations refused.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "assert_ok.h"
#include "features/length_change.h"
#include "features/pcm.h"
#include "features/waveform_augment.h"
#include "loader/digest.h"
#include "loader/loader.h"
#include "loader/options_json.h"
#include "shards/checksum.h"
#include "test_dataset.h"
#include "test_util.h"

namespace sluice::loader {
namespace {

using loader::testing::AudioDatasetSpec;

class AugmentLoaderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new sluice::testing::TempDir();
    for (const char* d : {"speech", "noise", "rir", "noise8k"})
      std::filesystem::create_directories(dir_->Join(d));
    spec_.records = 40;
    spec_.max_samples = 12000;
    loader::testing::WriteAudioDataset(dir_->Join("speech"), spec_);
    noise_spec_.records = 4;
    noise_spec_.seed = 2;
    noise_ = loader::testing::WriteAudioDataset(dir_->Join("noise"), noise_spec_);
    rir_spec_.records = 3;
    rir_spec_.seed = 3;
    rir_spec_.min_samples = 400;
    rir_spec_.max_samples = 3000;
    rir_ = loader::testing::WriteAudioDataset(dir_->Join("rir"), rir_spec_);
  }
  static void TearDownTestSuite() { delete dir_; }

  // Every transform on for about half the records; codecs that cost little per record.
  static LoaderOptions Options() {
    LoaderOptions o;
    o.kind = FeatureKind::kRaw;
    o.threads = 2;
    o.seed = 5;
    o.batching.max_frames = 40000;
    o.batching.shuffle_window = 8;
    features::WaveformAugmentOptions& w = o.waveform_augment;
    w.reverb.probability = 0.5;
    w.noise.probability = 0.5;
    w.gain.probability = 0.5;
    w.clipping.probability = 0.3;
    w.band_limit.probability = 0.3;
    w.codec.probability = 0.3;
    w.codec.codecs = {"ulaw", "gsm", "mp3"};
    o.noise_data = dir_->Join("noise");
    o.rir_data = dir_->Join("rir");
    return o;
  }

  static std::vector<uint64_t> Epoch(const LoaderOptions& o, uint64_t epoch, uint64_t start = 0) {
    std::unique_ptr<Loader> l;
    Status st = Loader::Open(dir_->Join("speech"), o, &l);
    EXPECT_OK(st);
    if (!st.ok()) return {};
    EXPECT_OK(l->Start(epoch, start));
    std::vector<uint64_t> out;
    const Batch* b;
    while ((st = l->Next(&b)).ok() && b != nullptr) out.push_back(DigestOf(*b));
    EXPECT_OK(st);
    return out;
  }

  // The clips as LoadAugmentSources decodes them: every record of the dataset, in [-1, 1].
  static std::vector<std::vector<float>> Clips(const AudioDatasetSpec& spec) {
    std::vector<std::vector<float>> out;
    for (int i = 0; i < spec.records; ++i) {
      const std::vector<int16_t> pcm = loader::testing::RecordSamples(spec, i);
      out.emplace_back(pcm.size());
      features::Pcm16ToFloat(pcm.data(), pcm.size(), out.back().data(), 1.0f / 32768);
    }
    return out;
  }

  static sluice::testing::TempDir* dir_;
  static AudioDatasetSpec spec_, noise_spec_, rir_spec_;
  static shards::Manifest noise_, rir_;
};
sluice::testing::TempDir* AugmentLoaderTest::dir_ = nullptr;
AudioDatasetSpec AugmentLoaderTest::spec_, AugmentLoaderTest::noise_spec_,
    AugmentLoaderTest::rir_spec_;
shards::Manifest AugmentLoaderTest::noise_, AugmentLoaderTest::rir_;

TEST_F(AugmentLoaderTest, SameAugmentedBatchesWithAnyThreadsAndAfterResume) {
  LoaderOptions o = Options();
  o.threads = 1;
  const std::vector<uint64_t> one = Epoch(o, 2);
  ASSERT_GT(one.size(), 3u);
  o.threads = 4;
  o.blocks_in_flight = 3;
  EXPECT_EQ(one, Epoch(o, 2));
  EXPECT_EQ(std::vector<uint64_t>(one.begin() + 2, one.end()), Epoch(o, 2, 2));
  LoaderOptions plain = Options();
  plain.waveform_augment = {};
  plain.noise_data.clear();
  plain.rir_data.clear();
  EXPECT_NE(one, Epoch(plain, 2)) << "the chain changed nothing";
  EXPECT_NE(one, Epoch(o, 3)) << "the next epoch draws anew";
}

// Each raw row is the record's samples through features::AugmentWaveform with the record's key
// and the clips as decoded here: the loader adds nothing and leaves nothing out, on every rank.
TEST_F(AugmentLoaderTest, RowsAreTheKernelsChainOnEveryRank) {
  features::WaveformSources clips;
  clips.noise = Clips(noise_spec_);
  for (const auto& h : Clips(rir_spec_)) {
    clips.rirs.emplace_back();
    ASSERT_OK(features::PrepareImpulseResponse(h.data(), h.size(), &clips.rirs.back()));
  }
  features::WaveformWorkspace ws;
  int checked = 0, changed = 0;
  for (int world : {1, 2}) {
    for (int rank = 0; rank < world; ++rank) {
      LoaderOptions o = Options();
      o.world = world;
      o.rank = rank;
      std::unique_ptr<Loader> l;
      ASSERT_OK(Loader::Open(dir_->Join("speech"), o, &l));
      ASSERT_OK(l->Start(1));
      const Batch* b;
      while (l->Next(&b).ok() && b != nullptr) {
        for (size_t i = 0; i < b->size(); ++i) {
          const int idx = std::stoi(std::string(b->keys()[i]).substr(3));
          const std::vector<int16_t> pcm = loader::testing::RecordSamples(spec_, idx);
          std::vector<float> want(pcm.size());
          features::Pcm16ToFloat(pcm.data(), pcm.size(), want.data(), 1.0f);
          const std::vector<float> before = want;
          ASSERT_OK(features::AugmentWaveform(o.waveform_augment, clips, o.seed, 1, idx,
                                              want.data(), want.size(), 16000, 32768.0f, &ws));
          ASSERT_EQ(b->lengths()[i], static_cast<int32_t>(want.size())) << b->keys()[i];
          const float* row = b->features_f32() + i * b->frames();
          ASSERT_EQ(std::vector<float>(row, row + want.size()), want)
              << b->keys()[i] << " rank " << rank << " of " << world;
          ++checked;
          changed += want != before;
        }
      }
    }
  }
  EXPECT_EQ(checked, 2 * spec_.records);
  EXPECT_GT(changed, spec_.records / 2);  // P(untouched) = 0.5^3 * 0.7^3, about 4%
}

// Babble from the training data itself: the pool is pool_size records evenly spaced over the
// dataset, the same on every rank and thread count, and each row is the kernels' chain with that
// pool, where a record never babbles over itself.
TEST_F(AugmentLoaderTest, BabbleFromTheTrainingDataReplaysOnEveryRankAndThreadCount) {
  LoaderOptions o = Options();
  o.waveform_augment = {};
  o.noise_data.clear();
  o.rir_data.clear();
  o.waveform_augment.babble.probability = 0.8;
  o.waveform_augment.babble.min_speakers = 1;
  o.waveform_augment.babble.max_speakers = 4;
  o.waveform_augment.babble.pool_size = 10;
  features::WaveformSources clips;
  const std::vector<std::vector<float>> all = Clips(spec_);
  for (uint64_t id = 0; id < 40; id += 4) {  // 10 of 40, evenly spaced
    clips.babble.push_back(all[id]);
    clips.babble_ids.push_back(id);
  }
  features::WaveformWorkspace ws;
  int checked = 0, changed = 0;
  for (int world : {1, 3}) {
    for (int rank = 0; rank < world; ++rank) {
      o.world = world;
      o.rank = rank;
      std::unique_ptr<Loader> l;
      ASSERT_OK(Loader::Open(dir_->Join("speech"), o, &l));
      ASSERT_OK(l->Start(4));
      const Batch* b;
      while (l->Next(&b).ok() && b != nullptr) {
        for (size_t i = 0; i < b->size(); ++i) {
          const int idx = std::stoi(std::string(b->keys()[i]).substr(3));
          const std::vector<int16_t> pcm = loader::testing::RecordSamples(spec_, idx);
          std::vector<float> want(pcm.size());
          features::Pcm16ToFloat(pcm.data(), pcm.size(), want.data(), 1.0f);
          const std::vector<float> before = want;
          ASSERT_OK(features::AugmentWaveform(o.waveform_augment, clips, o.seed, 4, idx,
                                              want.data(), want.size(), 16000, 32768.0f, &ws));
          const float* row = b->features_f32() + i * b->frames();
          ASSERT_EQ(std::vector<float>(row, row + want.size()), want)
              << b->keys()[i] << " rank " << rank << " of " << world;
          ++checked;
          changed += want != before;
        }
      }
    }
  }
  EXPECT_EQ(checked, 2 * spec_.records);
  EXPECT_GT(changed, spec_.records);  // about 0.8 of them, twice
  o.world = 1;
  o.rank = 0;
  o.threads = 1;
  const std::vector<uint64_t> one = Epoch(o, 4);
  o.threads = 4;
  EXPECT_EQ(one, Epoch(o, 4));
  EXPECT_EQ(std::vector<uint64_t>(one.begin() + 1, one.end()), Epoch(o, 4, 1));
  // The run record names the pool's dataset by content.
  std::unique_ptr<Loader> l;
  ASSERT_OK(Loader::Open(dir_->Join("speech"), o, &l));
  shards::Manifest speech;
  ASSERT_OK(shards::LoadManifest(dir_->Join("speech"), &speech));
  EXPECT_EQ(LoaderConfigJson(l->options(), 16000).at("babble_content"),
            shards::ChecksumHex(shards::ManifestFingerprint(speech)));
  // The pool's samples count against the memory budget, and the refusal says how to shrink it.
  o.memory_budget = 1000;
  const Status s = Loader::Open(dir_->Join("speech"), o, &l);
  EXPECT_NE(s.ToString().find("--babble-pool"), std::string::npos) << s.ToString();
}

// A record that select or filter leaves out (a held-out split of the same dataset) is never in the
// babble pool: the pool is spaced over the records the epochs hold.
TEST_F(AugmentLoaderTest, BabblePoolHoldsOnlyRecordsTheEpochsHold) {
  LoaderOptions o = Options();
  o.waveform_augment = {};
  o.noise_data.clear();
  o.rir_data.clear();
  o.waveform_augment.babble.probability = 1;
  o.waveform_augment.babble.pool_size = 10;
  auto index_of = [](std::string_view key) { return std::stoi(std::string(key.substr(3))); };
  o.select = [&](std::string_view key) { return index_of(key) < 20; };
  features::WaveformSources clips;
  const std::vector<std::vector<float>> all = Clips(spec_);
  for (uint64_t id = 0; id < 20; id += 2) {  // 10 of the 20 held, evenly spaced
    clips.babble.push_back(all[id]);
    clips.babble_ids.push_back(id);
  }
  features::WaveformWorkspace ws;
  std::unique_ptr<Loader> l;
  ASSERT_OK(Loader::Open(dir_->Join("speech"), o, &l));
  ASSERT_OK(l->Start(2));
  const Batch* b;
  int checked = 0;
  while (l->Next(&b).ok() && b != nullptr) {
    for (size_t i = 0; i < b->size(); ++i) {
      const int idx = index_of(b->keys()[i]);
      const std::vector<int16_t> pcm = loader::testing::RecordSamples(spec_, idx);
      std::vector<float> want(pcm.size());
      features::Pcm16ToFloat(pcm.data(), pcm.size(), want.data(), 1.0f);
      ASSERT_OK(features::AugmentWaveform(o.waveform_augment, clips, o.seed, 2, idx, want.data(),
                                          want.size(), 16000, 32768.0f, &ws));
      const float* row = b->features_f32() + i * b->frames();
      ASSERT_EQ(std::vector<float>(row, row + want.size()), want) << b->keys()[i];
      ++checked;
    }
  }
  EXPECT_EQ(checked, 20);
}

// Babble from babble_data: its clips are no record of the training data, so any may be picked.
TEST_F(AugmentLoaderTest, BabbleFromBabbleDataUsesItsClips) {
  LoaderOptions o = Options();
  o.waveform_augment = {};
  o.noise_data.clear();
  o.rir_data.clear();
  o.waveform_augment.babble.probability = 1;
  o.babble_data = dir_->Join("noise");
  features::WaveformSources clips;
  clips.babble = Clips(noise_spec_);
  clips.babble_ids.assign(clips.babble.size(), features::kNotATrainingRecord);
  std::unique_ptr<Loader> l;
  ASSERT_OK(Loader::Open(dir_->Join("speech"), o, &l));
  EXPECT_EQ(LoaderConfigJson(l->options(), 16000).at("babble_content"),
            shards::ChecksumHex(shards::ManifestFingerprint(noise_)));
  ASSERT_OK(l->Start(0));
  features::WaveformWorkspace ws;
  const Batch* b;
  ASSERT_OK(l->Next(&b));
  ASSERT_NE(b, nullptr);
  const int idx = std::stoi(std::string(b->keys()[0]).substr(3));
  const std::vector<int16_t> pcm = loader::testing::RecordSamples(spec_, idx);
  std::vector<float> want(pcm.size());
  features::Pcm16ToFloat(pcm.data(), pcm.size(), want.data(), 1.0f);
  ASSERT_OK(features::AugmentWaveform(o.waveform_augment, clips, o.seed, 0, idx, want.data(),
                                      want.size(), 16000, 32768.0f, &ws));
  EXPECT_EQ(std::vector<float>(b->features_f32(), b->features_f32() + want.size()), want);
  // Given and unused, it would be read and ignored.
  o.waveform_augment.babble.probability = 0;
  o.waveform_augment.gain.probability = 1;
  const Status s = Loader::Open(dir_->Join("speech"), o, &l);
  EXPECT_NE(s.ToString().find("babble_data is given"), std::string::npos) << s.ToString();
}

// Speed perturbation is the chain's first transform: at probability 1 the older spelling
// (speed_perturb, speed_perturb_options) gives the same batches and the same run record; below
// 1 it replays on any thread count; spellings that disagree are refused.
TEST_F(AugmentLoaderTest, SpeedInTheChainEqualsTheOlderSpelling) {
  LoaderOptions older = Options();
  older.waveform_augment = {};
  older.noise_data.clear();
  older.rir_data.clear();
  LoaderOptions chain = older;
  older.speed_perturb = true;
  older.speed_perturb_options.factors = {0.8, 1.0, 1.25};
  chain.waveform_augment.speed.probability = 1;
  chain.waveform_augment.speed.factors = {0.8, 1.0, 1.25};
  const std::vector<uint64_t> a = Epoch(older, 3);
  ASSERT_GT(a.size(), 3u);
  EXPECT_EQ(a, Epoch(chain, 3));
  LoaderOptions plain = chain;
  plain.waveform_augment.speed = {};
  EXPECT_NE(a, Epoch(plain, 3)) << "speed perturbation changed nothing";
  // The same record: as given, and as each loader resolved it; in the older form, so that runs
  // recorded before the chain took speed resume.
  const nlohmann::json j = LoaderConfigJson(older);
  EXPECT_EQ(j, LoaderConfigJson(chain));
  EXPECT_EQ(j.at("speed_perturb"), true);
  EXPECT_FALSE(j.contains("waveform_augment")) << j.dump();
  std::unique_ptr<Loader> l1, l2;
  ASSERT_OK(Loader::Open(dir_->Join("speech"), older, &l1));
  ASSERT_OK(Loader::Open(dir_->Join("speech"), chain, &l2));
  EXPECT_EQ(LoaderConfigJson(l1->options(), 16000), LoaderConfigJson(l2->options(), 16000));
  // Only --speed-factors given with --speed-perturb (the flag now sets the chain's factors).
  older.speed_perturb_options = {};
  older.waveform_augment.speed.factors = {0.8, 1.0, 1.25};
  EXPECT_EQ(a, Epoch(older, 3));
  // Below 1: a share of the records keep their speed; any thread count replays it.
  chain.waveform_augment.speed.probability = 0.5;
  chain.threads = 1;
  const std::vector<uint64_t> half = Epoch(chain, 3);
  EXPECT_NE(half, a);
  chain.threads = 4;
  EXPECT_EQ(half, Epoch(chain, 3));
  EXPECT_EQ(std::vector<uint64_t>(half.begin() + 2, half.end()), Epoch(chain, 3, 2));
  EXPECT_EQ(LoaderConfigJson(chain).at("waveform_augment").at("speed").at("probability"), 0.5);
  // Two spellings that disagree.
  chain.speed_perturb = true;
  std::unique_ptr<Loader> l;
  Status s = Loader::Open(dir_->Join("speech"), chain, &l);
  EXPECT_NE(s.ToString().find("--speed-prob"), std::string::npos) << s.ToString();
  chain.waveform_augment.speed.probability = 1;
  chain.speed_perturb_options.factors = {0.9, 1.1};
  s = Loader::Open(dir_->Join("speech"), chain, &l);
  EXPECT_NE(s.ToString().find("give the factors once"), std::string::npos) << s.ToString();
}

// Tempo joins speed in the chain's length-changing stage: each raw row is the record through
// features::ChangeLength with the record's draw (a record may get both), its planned length is the
// row's; the epoch replays on any thread count and after a resume; the run record holds tempo, so
// that a resume with other factors is refused, and leaves no trace while tempo is off.
TEST_F(AugmentLoaderTest, TempoReplaysWithExactPlannedLengths) {
  LoaderOptions o = Options();
  o.waveform_augment = {};
  o.noise_data.clear();
  o.rir_data.clear();
  o.threads = 1;
  o.waveform_augment.tempo.probability = 0.7;
  o.waveform_augment.tempo.factors = {0.8, 1.25};
  o.waveform_augment.speed.probability = 0.5;
  o.waveform_augment.speed.factors = {0.9, 1.1};
  const std::vector<uint64_t> one = Epoch(o, 2);
  ASSERT_GT(one.size(), 3u);
  LoaderOptions two = o;
  two.threads = 2;
  EXPECT_EQ(one, Epoch(two, 2));
  LoaderOptions four = o;
  four.threads = 4;
  four.blocks_in_flight = 3;
  EXPECT_EQ(one, Epoch(four, 2));
  EXPECT_EQ(std::vector<uint64_t>(one.begin() + 2, one.end()), Epoch(four, 2, 2));
  LoaderOptions speed_only = o;
  speed_only.waveform_augment.tempo = {};
  EXPECT_NE(one, Epoch(speed_only, 2)) << "tempo changed nothing";
  EXPECT_NE(one, Epoch(o, 3)) << "the next epoch draws anew";

  features::LengthWorkspace ws;
  int checked = 0, stretched = 0, both = 0;
  std::unique_ptr<Loader> l;
  ASSERT_OK(Loader::Open(dir_->Join("speech"), four, &l));
  ASSERT_OK(l->Start(2));
  const Batch* b;
  while (l->Next(&b).ok() && b != nullptr) {
    for (size_t i = 0; i < b->size(); ++i) {
      const int idx = std::stoi(std::string(b->keys()[i]).substr(3));
      const std::vector<int16_t> pcm = loader::testing::RecordSamples(spec_, idx);
      std::vector<float> x(pcm.size());
      features::Pcm16ToFloat(pcm.data(), pcm.size(), x.data(), 1.0f);
      const features::LengthChange c =
          features::DrawLengthChange(o.waveform_augment, o.seed, 2, idx);
      const float* want = nullptr;
      size_t n = 0;
      ASSERT_OK(features::ChangeLength(x.data(), x.size(), 16000, 32768.0f, c, &ws, &want, &n));
      ASSERT_EQ(n, features::ChangedLength(x.size(), 16000, c)) << b->keys()[i];
      ASSERT_EQ(b->lengths()[i], static_cast<int32_t>(n)) << b->keys()[i];
      const float* row = b->features_f32() + i * b->frames();
      ASSERT_EQ(std::vector<float>(row, row + n), std::vector<float>(want, want + n))
          << b->keys()[i];
      ++checked;
      stretched += c.tempo != 1.0;
      both += c.tempo != 1.0 && c.speed != 1.0;
    }
  }
  EXPECT_EQ(checked, spec_.records);
  EXPECT_GT(stretched, spec_.records / 3);  // P = 0.7
  EXPECT_GT(both, 0);

  // The run record: another factor list is another run, named by its path.
  const nlohmann::json j = LoaderConfigJson(o, 16000);
  EXPECT_EQ(j.at("waveform_augment").at("tempo").at("probability"), 0.7);
  LoaderOptions other = o;
  other.waveform_augment.tempo.factors = {0.9, 1.1};
  std::string path;
  const std::string diff = FirstDifference(LoaderConfigJson(other, 16000), j, "checkpoint", &path);
  EXPECT_EQ(path, "/waveform_augment/tempo/factors") << diff;
  EXPECT_FALSE(LoaderConfigJson(speed_only, 16000).at("waveform_augment").contains("tempo"))
      << "tempo off leaves no trace: records from before it compare equal";

  // Refused where it cannot apply, or outside SoundTouch's range.
  o.waveform_augment.tempo.factors = {0.05};
  Status s = Loader::Open(dir_->Join("speech"), o, &l);
  EXPECT_NE(s.ToString().find("tempo.factors"), std::string::npos) << s.ToString();
  std::filesystem::create_directories(dir_->Join("text_tempo"));
  loader::testing::WriteTextDataset(dir_->Join("text_tempo"), 10, false);
  LoaderOptions text;
  text.waveform_augment.tempo.probability = 1;
  s = Loader::Open(dir_->Join("text_tempo"), text, &l);
  EXPECT_NE(s.ToString().find("apply to audio datasets"), std::string::npos) << s.ToString();
}

TEST_F(AugmentLoaderTest, ResolvedOptionsRecordTheClipsByContent) {
  std::unique_ptr<Loader> l;
  ASSERT_OK(Loader::Open(dir_->Join("speech"), Options(), &l));
  const nlohmann::json j = LoaderConfigJson(l->options(), 16000);
  EXPECT_EQ(j.at("noise_content"), shards::ChecksumHex(shards::ManifestFingerprint(noise_)));
  EXPECT_EQ(j.at("rir_content"), shards::ChecksumHex(shards::ManifestFingerprint(rir_)));
  EXPECT_EQ(j.at("waveform_augment").at("gain").at("max_db"), 6.0);
  EXPECT_FALSE(j.contains("noise_data")) << "a path is not part of what a run is";
  // Another range is another run: a resume compares these and names the field.
  LoaderOptions other = l->options();
  other.waveform_augment.gain.max_db = 3;
  std::string path;
  const std::string diff = FirstDifference(LoaderConfigJson(other, 16000), j, "checkpoint", &path);
  EXPECT_EQ(path, "/waveform_augment/gain/max_db") << diff;
  // Off, the chain leaves no trace: configurations from before it compare equal.
  const nlohmann::json off = LoaderConfigJson(LoaderOptions(), 16000);
  EXPECT_FALSE(off.contains("waveform_augment"));
  EXPECT_FALSE(off.contains("noise_content"));
}

TEST_F(AugmentLoaderTest, MisconfigurationsAreRefusedWithAHint) {
  auto refusal = [&](const LoaderOptions& o) {
    std::unique_ptr<Loader> l;
    const Status s = Loader::Open(dir_->Join("speech"), o, &l);
    EXPECT_FALSE(s.ok());
    return s.ToString();
  };
  LoaderOptions o = Options();
  o.noise_data.clear();
  EXPECT_NE(refusal(o).find("--noise-data"), std::string::npos) << refusal(o);
  o = Options();
  o.waveform_augment.reverb.probability = 0;
  EXPECT_NE(refusal(o).find("rir_data is given"), std::string::npos) << refusal(o);
  o = Options();
  o.waveform_augment.codec.codecs = {"aac"};
  EXPECT_NE(refusal(o).find("unknown codec 'aac'"), std::string::npos) << refusal(o);
  o = Options();
  o.waveform_augment.gain.min_db = 7;
  EXPECT_NE(refusal(o).find("gain.min_db/max_db"), std::string::npos) << refusal(o);
  // Clips at another rate than the data: the message says how to make them fit.
  AudioDatasetSpec at8k = noise_spec_;
  at8k.sample_rate = 8000;
  loader::testing::WriteAudioDataset(dir_->Join("noise8k"), at8k);
  o = Options();
  o.noise_data = dir_->Join("noise8k");
  EXPECT_NE(refusal(o).find("--sample-rate 16000"), std::string::npos) << refusal(o);
  o = Options();
  o.memory_budget = 1000;
  EXPECT_NE(refusal(o).find("memory_budget"), std::string::npos) << refusal(o);
  // A text dataset has no waveform: the chain and its clips would be accepted and ignored.
  std::filesystem::create_directories(dir_->Join("text"));
  loader::testing::WriteTextDataset(dir_->Join("text"), 10, false);
  LoaderOptions text;
  text.noise_data = dir_->Join("noise");
  std::unique_ptr<Loader> l;
  const Status s = Loader::Open(dir_->Join("text"), text, &l);
  EXPECT_NE(s.ToString().find("apply to audio datasets"), std::string::npos) << s.ToString();
}

TEST_F(AugmentLoaderTest, TransformsThatCouldNeverHappenAreRefusedAtOpen) {
  LoaderOptions o;
  o.kind = FeatureKind::kRaw;
  o.waveform_augment.codec.probability = 1;
  o.waveform_augment.codec.codecs.clear();
  std::unique_ptr<Loader> l;
  Status s = Loader::Open(dir_->Join("speech"), o, &l);
  EXPECT_NE(s.ToString().find("codec.codecs: empty"), std::string::npos) << s.ToString();
  o.waveform_augment.codec.probability = 0;
  o.waveform_augment.band_limit.probability = 1;
  o.waveform_augment.band_limit.rates.clear();
  s = Loader::Open(dir_->Join("speech"), o, &l);
  EXPECT_NE(s.ToString().find("band_limit.rates: empty"), std::string::npos) << s.ToString();
  // Opus at 22.05 kHz: libsndfile cannot encode it, which would stop the epoch at the first
  // record that draws it.
  AudioDatasetSpec at22k = spec_;
  at22k.records = 4;
  at22k.sample_rate = 22050;
  std::filesystem::create_directories(dir_->Join("speech22k"));
  loader::testing::WriteAudioDataset(dir_->Join("speech22k"), at22k);
  o = LoaderOptions();
  o.kind = FeatureKind::kRaw;
  o.waveform_augment.codec.probability = 0.1;
  o.waveform_augment.codec.codecs = {"ulaw", "opus"};
  s = Loader::Open(dir_->Join("speech22k"), o, &l);
  EXPECT_NE(s.ToString().find("codec.codecs: opus at 22050 Hz"), std::string::npos) << s.ToString();
  o.waveform_augment.codec.codecs = {"ulaw"};
  EXPECT_OK(Loader::Open(dir_->Join("speech22k"), o, &l));
}

}  // namespace
}  // namespace sluice::loader
