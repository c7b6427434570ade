// The options tables' JSON (loader/options_json.h, base/fields.h): every field of every table
// survives a round trip and is written at all, and manifests written before the tables still read.
#include "loader/options_json.h"

#include <gtest/gtest.h>

#include <string>

#include "features/augment.h"
#include "features/fbank.h"
#include "features/spectrogram.h"
#include "loader/features_json.h"
#include "loader/options.h"
#include "mutate_fields.h"

namespace sluice::loader {
namespace {

using testing::Change;
using testing::ForEachLeaf;

// For each leaf of S in turn: change it alone, write, read into a default S, write again. The
// JSON must differ from the default's (the field is written) and come back equal (it is read).
template <class S>
void EveryFieldRoundTrips() {
  int leaf = 0;
  S probe;
  ForEachLeaf(probe, [&](const std::string& path, const FieldInfo&, auto&) {
    S changed;
    int i = 0;
    ForEachLeaf(changed, [&](const std::string&, const FieldInfo& f, auto& m) {
      if (i++ == leaf) Change(f, &m);
    });
    const nlohmann::json j = ToJson(changed);
    EXPECT_NE(j, ToJson(S())) << path << " is not written";
    S read;
    const Status s = FromJson(j, "test", &read);
    ASSERT_TRUE(s.ok()) << path << ": " << s.ToString();
    EXPECT_EQ(ToJson(read), j) << path << " does not read back";
    ++leaf;
  });
  EXPECT_GT(leaf, 0);
}

TEST(OptionsJson, EveryFbankFieldRoundTrips) { EveryFieldRoundTrips<features::FbankOptions>(); }
TEST(OptionsJson, EverySpectrogramFieldRoundTrips) {
  EveryFieldRoundTrips<features::SpectrogramOptions>();
}
TEST(OptionsJson, EveryAugmentationFieldRoundTrips) {
  EveryFieldRoundTrips<features::SpecAugmentOptions>();
  EveryFieldRoundTrips<features::SpeedPerturbOptions>();
}
TEST(OptionsJson, EveryBatchingAndPackingFieldRoundTrips) {
  EveryFieldRoundTrips<BatchingOptions>();
  EveryFieldRoundTrips<PackingOptions>();
}
TEST(OptionsJson, EveryLoaderFieldRoundTripsNestedTablesIncluded) {
  EveryFieldRoundTrips<LoaderOptions>();
}

TEST(OptionsJson, WhatFieldsLeaveOutHowFields) {
  LoaderOptions o;
  const nlohmann::json what = ToJson(o, Fields::kWhat);
  EXPECT_TRUE(what.contains("seed"));
  EXPECT_TRUE(what["features"]["fbank"].contains("use_log_fbank"));
  EXPECT_FALSE(what.contains("threads"));
  EXPECT_FALSE(what.contains("ready_batches"));
  EXPECT_TRUE(ToJson(o).contains("threads"));
}

TEST(OptionsJson, UnknownEnumNameIsAnErrorNamingTheField) {
  features::FbankOptions f;
  const Status s = FromJson(nlohmann::json{{"window_type", "square"}}, "manifest.json", &f);
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(s.message().find("window_type"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("square"), std::string::npos) << s.ToString();
}

TEST(OptionsJson, FirstDifferenceNamesThePathAndBothValues) {
  LoaderOptions a, b;
  b.features.fbank.use_log_fbank = false;
  b.batching.max_frames = 7;
  std::string path;
  const std::string d = FirstDifference(ToJson(b), ToJson(a), "checkpoint", &path);
  // Objects are compared in key order: batching before features.
  EXPECT_EQ(path, "/batching/max_frames");
  EXPECT_EQ(d, "batching.max_frames: 7 (checkpoint: 20000)");
  b.batching.max_frames = a.batching.max_frames;
  FirstDifference(ToJson(b), ToJson(a), "checkpoint", &path);
  EXPECT_EQ(path, "/features/fbank/use_log_fbank");
  EXPECT_EQ(FirstDifference(ToJson(a), ToJson(a), "checkpoint", &path), "");
}

TEST(OptionsJson, LoaderConfigKeepsOnlyTheFeatureKindInUse) {
  LoaderOptions o;
  o.kind = FeatureKind::kSpectrogram;
  const nlohmann::json j = LoaderConfigJson(o);
  EXPECT_TRUE(j.contains("spectrogram"));
  EXPECT_FALSE(j.contains("fbank"));
  EXPECT_FALSE(j.contains("spec_augment_options"));  // off
  o.spec_augment = true;
  EXPECT_TRUE(LoaderConfigJson(o).contains("spec_augment_options"));
}

// Options added after run records were first written leave no trace at their defaults, so that
// a checkpoint from before them still resumes; set, they are recorded.
TEST(OptionsJson, LaterOptionsAtTheirDefaultsLeaveNoTrace) {
  LoaderOptions o;
  o.packing.seq_len = 512;
  const nlohmann::json j = LoaderConfigJson(o);
  EXPECT_FALSE(j["batching"].contains("bucket_2d")) << j.dump();
  EXPECT_FALSE(j["batching"].contains("max_padded_sum")) << j.dump();
  EXPECT_FALSE(j["packing"].contains("balance_ranks")) << j.dump();
  EXPECT_FALSE(j.contains("window_seconds")) << j.dump();
  o.packing.balance_ranks = true;
  o.window_seconds = 30;
  EXPECT_TRUE(LoaderConfigJson(o)["packing"].contains("balance_ranks"));
  EXPECT_TRUE(LoaderConfigJson(o).contains("window_seconds"));
  LoaderOptions padded;
  padded.batching.bucket_2d = true;
  padded.batching.max_padded_sum = 4096;
  EXPECT_TRUE(LoaderConfigJson(padded)["batching"].contains("bucket_2d"));
  EXPECT_TRUE(LoaderConfigJson(padded)["batching"].contains("max_padded_sum"));
}

// The feature arguments are recorded as the computer resolves them: the kind's defaults spelled
// out are the same configuration as left out, and the rate is the dataset's when given.
TEST(OptionsJson, LoaderConfigResolvesTheFeatureArguments) {
  LoaderOptions o, spelled;
  spelled.features.frame_length_ms = 25;
  spelled.features.window_type = "povey";
  spelled.features.snip_edges = true;
  EXPECT_EQ(LoaderConfigJson(o), LoaderConfigJson(spelled));
  EXPECT_FALSE(LoaderConfigJson(o).contains("features"));
  EXPECT_FALSE(LoaderConfigJson(o)["fbank"].contains("sample_frequency"));
  EXPECT_EQ(LoaderConfigJson(o, 8000)["fbank"]["sample_frequency"], 8000.0);
  EXPECT_EQ(LoaderConfigJson(o)["fbank"]["frame_length_ms"], 25.0);
  o.kind = FeatureKind::kSpectrogram;
  EXPECT_EQ(LoaderConfigJson(o)["spectrogram"]["window_ms"], 20.0);
  EXPECT_EQ(LoaderConfigJson(o)["spectrogram"]["frames"], "center");
  o.kind = FeatureKind::kRaw;
  EXPECT_FALSE(LoaderConfigJson(o).contains("fbank"));
  EXPECT_FALSE(LoaderConfigJson(o).contains("spectrogram"));
}

// Manifests from before the tables: the spectrogram's "center" and fbank's kebab-case names.
TEST(FeaturesJson, ManifestsBeforeTheTablesStillRead) {
  bool is_fbank = true;
  features::FbankOptions f;
  features::SpectrogramOptions s;
  ASSERT_TRUE(FeaturesFromJson({{"kind", "spectrogram"}, {"center", false}, {"n_fft", 512}},
                               &is_fbank, &f, &s)
                  .ok());
  EXPECT_FALSE(is_fbank);
  EXPECT_EQ(s.frames, features::FrameConvention::kSnipEdges);
  EXPECT_EQ(s.n_fft, 512);
  ASSERT_TRUE(FeaturesFromJson({{"kind", "fbank"}, {"num-mel-bins", 40}, {"snip-edges", false}},
                               &is_fbank, &f, &s)
                  .ok());
  EXPECT_TRUE(is_fbank);
  EXPECT_EQ(f.num_mel_bins, 40);
  EXPECT_FALSE(f.snip_edges);
}

TEST(FeaturesJson, ManifestWriterAndReaderAgreeOnEveryField) {
  features::FbankOptions f;
  f.blackman_coeff = 0.5f;  // not written before the tables
  f.use_log_fbank = false;
  bool is_fbank = false;
  features::FbankOptions rf;
  features::SpectrogramOptions rs;
  ASSERT_TRUE(FeaturesFromJson(FbankFeaturesToJson(f), &is_fbank, &rf, &rs).ok());
  EXPECT_TRUE(is_fbank);
  EXPECT_EQ(ToJson(rf), ToJson(f));
  features::SpectrogramOptions s;
  s.frames = features::FrameConvention::kSnipEdges;
  ASSERT_TRUE(FeaturesFromJson(SpectrogramFeaturesToJson(s), &is_fbank, &rf, &rs).ok());
  EXPECT_FALSE(is_fbank);
  EXPECT_EQ(ToJson(rs), ToJson(s));
}

}  // namespace
}  // namespace sluice::loader
