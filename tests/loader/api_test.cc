// The Loader API beyond Start/Next (loader.h): what a trainer asks before and around an epoch
// (batch counts, the largest batch, what the features are) agrees with the batches it then gets.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>

#include "loader/loader.h"
#include "test_dataset.h"
#include "test_util.h"
#include "assert_ok.h"

namespace sluice::loader {
namespace {

using loader::testing::AudioDatasetSpec;

LoaderOptions Options() {
  LoaderOptions o;
  o.threads = 2;
  o.batching.max_frames = 1500;  // batches of a few records: several per epoch
  return o;
}

// Writes the dataset and opens it; null (and a failed test) when Open fails.
std::unique_ptr<Loader> OpenAudio(const std::string& dir, const AudioDatasetSpec& spec,
                                  const LoaderOptions& o) {
  loader::testing::WriteAudioDataset(dir, spec);
  std::unique_ptr<Loader> l;
  const Status st = Loader::Open(dir, o, &l);
  EXPECT_OK(st);
  return l;
}

// Batches of the started epoch until its end; fails the test on an error.
uint64_t Drain(Loader* l, BatchShape* largest = nullptr) {
  const Batch* b;
  uint64_t n = 0;
  Status st;
  while ((st = l->Next(&b)).ok() && b != nullptr) {
    ++n;
    if (largest == nullptr) continue;
    largest->rows = std::max<uint64_t>(largest->rows, b->size());
    largest->frames = std::max<uint64_t>(largest->frames, b->frames());
    largest->padded_frames = std::max<uint64_t>(largest->padded_frames, b->size() * b->frames());
    largest->tokens = std::max<uint64_t>(largest->tokens, b->max_tokens());
  }
  EXPECT_OK(st);
  return n;
}

// Speed perturbation changes the lengths, hence the batches, from epoch to epoch: the count of
// each comes from its own plan.
TEST(LoaderApi, CountBatchesIsTheBatchCountOfThatEpoch) {
  sluice::testing::TempDir dir;
  AudioDatasetSpec spec;
  spec.records = 80;
  LoaderOptions o = Options();
  o.speed_perturb = true;
  std::unique_ptr<Loader> l = OpenAudio(dir.path(), spec, o);
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->num_batches(), 0u);
  bool differ = false;
  uint64_t first = 0;
  for (uint64_t epoch = 0; epoch < 6; ++epoch) {
    uint64_t counted = 0;
    ASSERT_OK(l->CountBatches(epoch, &counted));
    if (epoch == 0) first = counted;
    differ |= counted != first;
    ASSERT_OK(l->Start(epoch));
    EXPECT_EQ(l->num_batches(), counted);
    // Counting another epoch mid-epoch leaves the started one as it was.
    const Batch* b;
    ASSERT_OK(l->Next(&b));
    uint64_t other = 0;
    ASSERT_OK(l->CountBatches(epoch + 1, &other));
    EXPECT_EQ(l->state().batches, 1u);
    EXPECT_EQ(1 + Drain(l.get()), counted) << "epoch " << epoch;
  }
  EXPECT_TRUE(differ) << "the test needs epochs of different counts";
}

TEST(LoaderApi, MaxBatchShapeIsTheLargestBatchOfThePlan) {
  sluice::testing::TempDir dir;
  AudioDatasetSpec spec;
  spec.records = 80;
  spec.with_tokens = true;
  std::unique_ptr<Loader> l = OpenAudio(dir.path(), spec, Options());
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->max_batch_shape().rows, 0u);
  ASSERT_OK(l->Start(1));
  const BatchShape shape = l->max_batch_shape();
  BatchShape seen;
  Drain(l.get(), &seen);
  EXPECT_GT(seen.tokens, 0u);
  EXPECT_EQ(shape.rows, seen.rows);
  EXPECT_EQ(shape.frames, seen.frames);
  EXPECT_EQ(shape.padded_frames, seen.padded_frames);
  EXPECT_EQ(shape.tokens, seen.tokens);
  // Resumed past the largest batches, the shape is still the whole plan's.
  ASSERT_OK(l->Start(1, l->num_batches()));
  EXPECT_EQ(l->max_batch_shape().padded_frames, shape.padded_frames);
}

TEST(LoaderApi, PackedShapeIsBatchSizeByLPlusOne) {
  sluice::testing::TempDir dir;
  loader::testing::WriteTokenDataset(dir.path(), 60);
  LoaderOptions o = Options();
  o.packing.seq_len = 24;
  o.packing.batch_size = 3;
  std::unique_ptr<Loader> l;
  ASSERT_OK(Loader::Open(dir.path(), o, &l));
  EXPECT_FALSE(l->feature_info().audio);
  ASSERT_OK(l->Start(0));
  const BatchShape shape = l->max_batch_shape();
  EXPECT_EQ(shape.rows, 3u);
  EXPECT_EQ(shape.tokens, 25u);
  EXPECT_EQ(shape.frames, 0u);
  BatchShape seen;
  Drain(l.get(), &seen);
  EXPECT_EQ(seen.rows, shape.rows);
  EXPECT_EQ(seen.tokens, shape.tokens);
}

// A dataset whose stored features use another frame shift than the options' fbank: the time a
// frame stands for is the dataset's (a trainer's hours of audio come from it).
TEST(LoaderApi, FeatureInfoTakesTheFrameShiftOfStoredFeatures) {
  sluice::testing::TempDir dir;
  AudioDatasetSpec spec;
  spec.records = 12;
  spec.precomputed = true;
  spec.precomputed_shift_ms = 20;
  LoaderOptions o = Options();
  ASSERT_EQ(o.features.frame_shift_ms, 10.0f);
  std::unique_ptr<Loader> l = OpenAudio(dir.path(), spec, o);
  ASSERT_NE(l, nullptr);
  FeatureInfo info = l->feature_info();
  EXPECT_TRUE(info.audio);
  EXPECT_EQ(info.kind, FeatureKind::kPrecomputed);
  EXPECT_EQ(info.dim, 80);
  EXPECT_EQ(info.sample_rate, spec.sample_rate);
  EXPECT_DOUBLE_EQ(info.frame_shift_seconds, 0.020);
  // The stored frames are 20 ms frames: frames x shift is the record's audio, to a frame.
  ASSERT_OK(l->Start(0));
  const Batch* b;
  ASSERT_OK(l->Next(&b));
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->dim(), info.dim);
  const int i = std::stoi(std::string(b->keys()[0]).substr(3));
  const double seconds =
      static_cast<double>(loader::testing::RecordSamples(spec, i).size()) / spec.sample_rate;
  EXPECT_NEAR(b->lengths()[0] * info.frame_shift_seconds, seconds, 0.045);

  o.use_precomputed = false;  // fbank from the audio, at the options' 10 ms
  ASSERT_OK(Loader::Open(dir.path(), o, &l));
  info = l->feature_info();
  EXPECT_EQ(info.kind, FeatureKind::kFbank);
  EXPECT_DOUBLE_EQ(info.frame_shift_seconds, 0.010);
  o.kind = FeatureKind::kRaw;
  o.dtype = DType::kFloat16;
  ASSERT_OK(Loader::Open(dir.path(), o, &l));
  info = l->feature_info();
  EXPECT_EQ(info.dim, 1);
  EXPECT_EQ(info.dtype, DType::kFloat16);
  EXPECT_DOUBLE_EQ(info.frame_shift_seconds, 1.0 / spec.sample_rate);
}

// One LoaderOptions opens an 8 kHz and a 16 kHz dataset: Open resolves the feature arguments
// (milliseconds, the kind's defaults) at each dataset's own rate, the caller reads no manifest.
TEST(LoaderApi, FeatureArgumentsResolveAtEachDatasetsRate) {
  for (const FeatureKind kind : {FeatureKind::kFbank, FeatureKind::kSpectrogram}) {
    LoaderOptions o = Options();
    o.kind = kind;
    o.batching.shuffle = false;
    for (const int rate : {8000, 16000}) {
      SCOPED_TRACE(std::string(FeatureKindName(kind)) + " at " + std::to_string(rate));
      sluice::testing::TempDir dir;
      AudioDatasetSpec spec;
      spec.records = 6;
      spec.sample_rate = rate;
      spec.min_samples = rate / 2;
      spec.max_samples = rate;
      std::unique_ptr<Loader> l = OpenAudio(dir.path(), spec, o);
      ASSERT_NE(l, nullptr);
      const FeatureInfo& info = l->feature_info();
      EXPECT_EQ(info.sample_rate, rate);
      EXPECT_DOUBLE_EQ(info.frame_shift_seconds, 0.010);
      // fbank: 80 mel bins at any rate; spectrogram: n_fft = the 20 ms window, n_fft / 2 + 1 bins.
      EXPECT_EQ(info.dim, kind == FeatureKind::kFbank ? 80 : rate / 50 / 2 + 1);
      ASSERT_OK(l->Start(0));
      const Batch* b;
      ASSERT_OK(l->Next(&b));
      ASSERT_NE(b, nullptr);
      for (size_t r = 0; r < b->size(); ++r) {
        const int i = std::stoi(std::string(b->keys()[r]).substr(3));
        const int64_t n = static_cast<int64_t>(loader::testing::RecordSamples(spec, i).size());
        const int64_t hop = rate / 100, window = rate / 40;  // 10 ms; fbank's 25 ms
        // fbank: whole frames (Kaldi); spectrogram: centred frames (torch.stft), 1 + n / hop.
        const int64_t frames = kind == FeatureKind::kFbank ? 1 + (n - window) / hop : 1 + n / hop;
        EXPECT_EQ(b->lengths()[r], frames) << b->keys()[r];
      }
    }
  }
}

// A feature argument that does not fit the dataset is refused by Open, the one place that checks
// it, naming its key in the options table (not a tool's flag); the same options may fit another
// rate.
TEST(LoaderApi, BadFeatureArgumentsAreRefusedByOpenNamingTheirKey) {
  sluice::testing::TempDir dir8, dir16;
  AudioDatasetSpec spec;
  spec.records = 4;
  spec.sample_rate = 8000;
  loader::testing::WriteAudioDataset(dir8.path(), spec);
  spec.sample_rate = 16000;
  loader::testing::WriteAudioDataset(dir16.path(), spec);
  std::unique_ptr<Loader> l;
  const auto refused = [&](const LoaderOptions& o, const std::string& dir,
                           const std::string& want) {
    const Status st = Loader::Open(dir, o, &l);
    EXPECT_TRUE(st.IsInvalidArgument()) << want << ": " << st.ToString();
    EXPECT_NE(st.message().find(want), std::string::npos) << st.ToString();
    // The option by its key; a HINT may name a tool's command that makes another dataset.
    EXPECT_EQ(st.message().substr(0, st.message().find("HINT")).find("--"), std::string::npos)
        << "names a flag: " << st.ToString();
  };
  LoaderOptions o = Options();
  o.features.window_type = "square";
  refused(o, dir16.path(), "features.window_type 'square': unknown window");
  o = Options();
  o.kind = FeatureKind::kPrecomputed;
  refused(o, dir16.path(), "kind precomputed: the dataset has no precomputed features");
  // n_fft 256 holds the 20 ms window of 8 kHz audio (160 samples), not of 16 kHz (320).
  o = Options();
  o.kind = FeatureKind::kSpectrogram;
  o.features.spectrogram.n_fft = 256;
  ASSERT_OK(Loader::Open(dir8.path(), o, &l));
  EXPECT_EQ(l->feature_info().dim, 129);
  refused(o, dir16.path(), "features.spectrogram options (at 16000 Hz)");
}

TEST(LoaderApi, TextDatasetsHaveNoFeatureRows) {
  sluice::testing::TempDir dir;
  loader::testing::WriteTextDataset(dir.path(), 20, true);
  std::unique_ptr<Loader> l;
  ASSERT_OK(Loader::Open(dir.path(), Options(), &l));
  const FeatureInfo& info = l->feature_info();
  EXPECT_FALSE(info.audio);
  EXPECT_EQ(info.dim, 0);
  EXPECT_EQ(info.sample_rate, 0);
  EXPECT_EQ(info.frame_shift_seconds, 0.0);
}

}  // namespace
}  // namespace sluice::loader
