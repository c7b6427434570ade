// sluice-train's options table (trainer/options.h) and the resume check made from it: every
// option that changes the data or results is refused on resume, naming it; options that only
// change speed or output are accepted; every table flag is in --help and in the docs.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli_util.h"
#include "features/waveform_augment.h"
#include "loader/options_json.h"
#include "mutate_fields.h"
#include "options_cli.h"
#include "trainer/options.h"

namespace sluice::train {
namespace {

using testing::Change;
using testing::ForEachLeaf;

// What the trainer does for a run: the training loader's options, then the run's record, on a
// dataset whose content fingerprint is `content`.
nlohmann::json RunOf(const TrainOptions& o, const std::string& what,
                     std::vector<uint64_t> content = {0x1234}) {
  loader::LoaderOptions lo;
  const Status s = TrainLoaderOptions(o, true, &lo);
  EXPECT_TRUE(s.ok()) << what << ": " << s.ToString();
  return RunConfigJson(o, lo, 16000, content);
}

// CheckRunConfig for a run on the dataset "ds".
Status Check(const nlohmann::json& now, const nlohmann::json& stored, const std::string& ckpt) {
  return CheckRunConfig(now, stored, ckpt, {"ds"});
}

// The base run of the tests: SpecAugment, speed perturbation and every waveform transform on so
// that their options count, no held-out fraction so that --eval alone changes nothing.
TrainOptions Base(loader::FeatureKind kind) {
  TrainOptions o;
  o.loader.kind = kind;
  o.loader.spec_augment = true;
  o.loader.speed_perturb = true;
  features::WaveformAugmentOptions& w = o.loader.waveform_augment;
  w.reverb.probability = w.noise.probability = w.gain.probability = 0.5;
  w.clipping.probability = w.band_limit.probability = w.codec.probability = 0.5;
  w.babble.probability = w.tempo.probability = 0.5;
  o.eval_fraction = 0;
  return o;
}

// Loader fields that are no input of sluice-train (tools/train/main.cc): the seed is the run's
// --seed, rank and world the launcher's, packing and other dtypes are refused
// (TrainLoaderOptionsRefusesWhatTheModelCannotTake).
bool SetOtherwise(const std::string& path) {
  return path == "loader.seed" || path == "loader.rank" || path == "loader.world" ||
         path == "loader.dtype" || path.rfind("loader.packing.", 0) == 0;
}

// Changes field number `leaf` of o's table (the loader's nested in it); returns its path, info.
std::string ChangeLeaf(TrainOptions* o, int leaf, FieldInfo* info) {
  int i = 0;
  std::string changed;
  const bool fbank = o->loader.kind == loader::FeatureKind::kFbank;
  auto visit = [&](const std::string& path, const FieldInfo& f, auto& m) {
    if (i++ != leaf) return;
    changed = path;
    *info = f;
    using T = std::remove_reference_t<decltype(m)>;
    // Values that the generic change would make invalid for the feature computers.
    if constexpr (std::is_same_v<T, std::string>) {
      if (path == "loader.features.window_type") return void(m = "hanning");
    }
    if constexpr (std::is_arithmetic_v<T>) {
      if (path == "loader.features.frame_length_ms") return void(m = 30);
      if (path == "loader.features.spectrogram.n_fft") return void(m = 512);
    }
    Change(f, &m, fbank);
  };
  ForEachLeaf(*o, visit);
  return changed;
}

int NumLeaves(TrainOptions o) {
  int n = 0;
  ForEachLeaf(o, [&](const std::string&, const FieldInfo&, auto&) { ++n; });
  return n;
}

// Whether the field decides this run's data or results: "what", set by a flag, and for feature
// options, of the kind in use.
bool Decides(const std::string& path, const FieldInfo& f, loader::FeatureKind kind) {
  if (f.affects != Affects::kWhat || f.flag == nullptr) return false;
  if (path.rfind("loader.features.fbank.", 0) == 0) return kind == loader::FeatureKind::kFbank;
  if (path.rfind("loader.features.spectrogram.", 0) == 0)
    return kind == loader::FeatureKind::kSpectrogram;
  return true;
}

void EveryWhatFieldIsRefusedAndEveryHowFieldAccepted(loader::FeatureKind kind) {
  const nlohmann::json stored = RunOf(Base(kind), "base");
  int refused = 0, accepted = 0;
  for (int leaf = 0; leaf < NumLeaves(Base(kind)); ++leaf) {
    TrainOptions o = Base(kind);
    FieldInfo f{};
    const std::string path = ChangeLeaf(&o, leaf, &f);
    // Not an input of a run: set from a shared flag or the data, or by sluice-train itself.
    if (f.flag == nullptr || SetOtherwise(path)) continue;
    const Status s = Check(RunOf(o, path), stored, "run.ckpt");
    if (!Decides(path, f, kind)) {
      EXPECT_TRUE(s.ok()) << path << " only changes how the run goes: " << s.ToString();
      accepted += s.ok();
      continue;
    }
    ASSERT_FALSE(s.ok()) << path << " (" << f.flag << ") changed, yet the resume was accepted";
    const std::string& m = s.message();
    EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
    EXPECT_EQ(m.rfind("run.ckpt: ", 0), 0u) << m;
    // Named by its key, its flag, or the spectrogram field that a shared flag resolves to.
    static const std::map<std::string, std::string> kResolved = {
        {"loader.features.frame_length_ms", ".window_ms:"},
        {"loader.features.frame_shift_ms", ".hop_ms:"},
        {"loader.features.window_type", ".window:"},
        {"loader.features.snip_edges", ".frames:"},
        // Another kind records another computer's options, which sort before "kind".
        {"loader.kind", "loader.fbank:"}};
    const auto alias = kResolved.find(path);
    const bool named = m.find(f.key) != std::string::npos || m.find(f.flag) != std::string::npos ||
                       (alias != kResolved.end() && m.find(alias->second) != std::string::npos);
    EXPECT_TRUE(named) << path << ": " << m;
    ++refused;
  }
  EXPECT_GT(refused, 30);
  EXPECT_GT(accepted, 5);
}

TEST(TrainOptions, ResumeRefusesEveryWhatFieldOfAnFbankRunNamingIt) {
  EveryWhatFieldIsRefusedAndEveryHowFieldAccepted(loader::FeatureKind::kFbank);
}

TEST(TrainOptions, ResumeRefusesEveryWhatFieldOfASpectrogramRunNamingIt) {
  EveryWhatFieldIsRefusedAndEveryHowFieldAccepted(loader::FeatureKind::kSpectrogram);
}

TEST(TrainOptions, ResumeAcceptsOtherLoaderThreadsAndTheDefaultsSpelledOut) {
  const TrainOptions base = Base(loader::FeatureKind::kFbank);
  TrainOptions o = base;
  o.loader.threads = 4;
  o.loader.features.frame_length_ms = 25;  // fbank's default, resolved the same
  o.loader.features.snip_edges = true;
  o.loader.features.window_type = "povey";
  EXPECT_TRUE(Check(RunOf(o, "same"), RunOf(base, "base"), "run.ckpt").ok());
}

TEST(TrainOptions, SpectrogramSnipEdgesIsRefused) {
  const TrainOptions base = Base(loader::FeatureKind::kSpectrogram);
  TrainOptions o = base;
  o.loader.features.snip_edges = true;
  const Status s = Check(RunOf(o, "snip"), RunOf(base, "base"), "run.ckpt");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("spectrogram.frames: \"snip_edges\" (checkpoint: \"center\")"),
            std::string::npos)
      << s.ToString();
}

// --steps alone makes the epochs unlimited (UINT64_MAX inside): a resume refused over them said
// "epochs: 3 (checkpoint: 18446744073709551615)".
TEST(TrainOptions, UnlimitedEpochsArePrintedAsUnlimited) {
  TrainOptions unlimited = Base(loader::FeatureKind::kFbank);
  unlimited.steps = 100;
  unlimited.epochs = UINT64_MAX;
  TrainOptions three = unlimited;
  three.epochs = 3;
  const Status s = Check(RunOf(three, "three"), RunOf(unlimited, "unlimited"), "run.ckpt");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("epochs: 3 (checkpoint: \"unlimited\") (flag --epochs)"),
            std::string::npos)
      << s.ToString();
  EXPECT_EQ(s.message().find("18446744073709551615"), std::string::npos) << s.ToString();
  EXPECT_TRUE(Check(RunOf(unlimited, "again"), RunOf(unlimited, "unlimited"), "run.ckpt").ok());
}

TEST(TrainOptions, CheckpointFromBeforeTheTablesIsRefusedWithAHint) {
  const nlohmann::json old = {{"lr", 0.003}, {"features", {{"kind", "fbank"}}}};
  const Status s = Check(RunOf(Base(loader::FeatureKind::kFbank), "base"), old, "old.ckpt");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("old.ckpt"), std::string::npos);
  EXPECT_NE(s.message().find("HINT"), std::string::npos);
}

// The data is part of the run by content: the same options on another dataset (another clip set
// with the same characters, or more clips) are another run, named as such; a moved copy is the
// same data (the fingerprint does not see the path).
TEST(TrainOptions, ResumeOnOtherDataIsRefusedNamingTheDataset) {
  const TrainOptions o = Base(loader::FeatureKind::kFbank);
  const nlohmann::json stored = RunOf(o, "a", {0xaaaa});
  EXPECT_TRUE(Check(RunOf(o, "copy of a", {0xaaaa}), stored, "run.ckpt").ok());
  const Status s = CheckRunConfig(RunOf(o, "b", {0xbbbb}), stored, "run.ckpt", {"/data/b"});
  ASSERT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_EQ(s.message().rfind("run.ckpt: written by a run on other data: /data/b holds content "
                              "\"000000000000bbbb\", the checkpoint's run trained on "
                              "\"000000000000aaaa\"",
                              0),
            0u)
      << s.message();
  EXPECT_NE(s.message().find("HINT"), std::string::npos) << s.message();
  // A mixture: each source by position, with its weight beside it in "data".
  TrainOptions mix = o;
  mix.data = {"/a:3", "/b:1"};
  const nlohmann::json stored_mix = RunOf(mix, "mix", {0xaaaa, 0xbbbb});
  EXPECT_TRUE(Check(RunOf(mix, "same", {0xaaaa, 0xbbbb}), stored_mix, "run.ckpt").ok());
  const Status other =
      CheckRunConfig(RunOf(mix, "other", {0xaaaa, 0xcccc}), stored_mix, "run.ckpt", {"/a", "/c"});
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.message().find("/c holds content"), std::string::npos) << other.message();
  EXPECT_NE(other.message().find("(source 2 of 2)"), std::string::npos) << other.message();
  const Status fewer = CheckRunConfig(RunOf(o, "one", {0xaaaa}), stored_mix, "run.ckpt", {"/a"});
  ASSERT_FALSE(fewer.ok());
  EXPECT_NE(fewer.message().find("a run on 2 dataset(s), this run trains on 1 (/a)"),
            std::string::npos)
      << fewer.message();
}

// A checkpoint of a sluice-train that recorded no data content is refused as one that recorded
// no loader options: nothing can tell whether the resume is on the same data.
TEST(TrainOptions, CheckpointWithoutDataContentIsRefusedWithAHint) {
  nlohmann::json old = RunOf(Base(loader::FeatureKind::kFbank), "old");
  old.erase("data_content");
  const Status s = Check(RunOf(Base(loader::FeatureKind::kFbank), "now"), old, "old.ckpt");
  ASSERT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.message().find("old.ckpt: written by a sluice-train that did not record which data"),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("HINT: start a fresh run"), std::string::npos) << s.message();
}

TEST(TrainOptions, EveryFieldRoundTripsThroughJson) {
  const int n = NumLeaves(TrainOptions());
  TrainOptions probe;
  int leaf = 0;
  ForEachLeaf(probe, [&](const std::string& path, const FieldInfo&, auto&) {
    TrainOptions o;
    FieldInfo f{};
    ChangeLeaf(&o, leaf++, &f);
    const nlohmann::json j = loader::ToJson(o);
    EXPECT_NE(j, loader::ToJson(TrainOptions())) << path << " is not written";
    TrainOptions read;
    ASSERT_TRUE(loader::FromJson(j, "test", &read).ok()) << path;
    EXPECT_EQ(loader::ToJson(read), j) << path;
  });
  EXPECT_EQ(n, leaf);
}

// What the model cannot take is refused naming the option, never trained on as something else.
TEST(TrainOptions, TrainLoaderOptionsRefusesWhatTheModelCannotTake) {
  const auto refused = [](void (*set)(TrainOptions*), const std::string& want) {
    TrainOptions o;
    set(&o);
    loader::LoaderOptions lo;
    const Status s = TrainLoaderOptions(o, true, &lo);
    EXPECT_TRUE(s.IsInvalidArgument()) << want << ": " << s.ToString();
    EXPECT_NE(s.message().find(want), std::string::npos) << s.ToString();
  };
  refused([](TrainOptions* o) { o->loader.kind = loader::FeatureKind::kRaw; }, "kind raw");
  refused([](TrainOptions* o) { o->loader.dtype = loader::DType::kBFloat16; }, "dtype bfloat16");
  refused([](TrainOptions* o) { o->loader.packing.seq_len = 64; }, "packing.seq_len 64");
  refused([](TrainOptions* o) { o->loader.world = 2; }, "from the launcher");
  // Augmentation and the shuffle are the training loader's alone; the run's seed keys both.
  TrainOptions o;
  o.seed = 7;
  o.loader.spec_augment = o.loader.speed_perturb = true;
  loader::LoaderOptions train, eval;
  ASSERT_TRUE(TrainLoaderOptions(o, true, &train).ok());
  ASSERT_TRUE(TrainLoaderOptions(o, false, &eval).ok());
  EXPECT_TRUE(train.spec_augment && train.speed_perturb && train.batching.shuffle);
  EXPECT_FALSE(eval.spec_augment || eval.speed_perturb || eval.batching.shuffle);
  EXPECT_EQ(train.seed, 7u);
  EXPECT_EQ(eval.seed, 7u);
}

// The waveform chain and its clip datasets likewise: an evaluation loader given noise_data would
// otherwise score the model on noisy audio (or be refused for a dataset that no transform uses).
TEST(TrainOptions, TheWaveformChainIsTheTrainingLoadersAlone) {
  TrainOptions o;
  o.loader.waveform_augment.noise.probability = 0.5;
  o.loader.waveform_augment.codec.probability = 0.2;
  o.loader.noise_data = "noise";
  o.loader.waveform_augment.babble.probability = 0.3;
  o.loader.babble_data = "voices";
  loader::LoaderOptions train, eval;
  ASSERT_TRUE(TrainLoaderOptions(o, true, &train).ok());
  ASSERT_TRUE(TrainLoaderOptions(o, false, &eval).ok());
  EXPECT_EQ(train.waveform_augment.noise.probability, 0.5);
  EXPECT_EQ(train.noise_data, "noise");
  EXPECT_FALSE(features::WaveformAugmentEnabled(eval.waveform_augment));
  EXPECT_TRUE(eval.noise_data.empty() && eval.rir_data.empty() && eval.babble_data.empty());
}

// ---- The tables against the tools' --help and the docs ----------------------------------------

std::string Help(const std::string& command) {
  const train_test::Result r = train_test::Shell(command + " --help");
  EXPECT_EQ(r.code, 0) << command << "\n" << r.out;
  return r.out;
}

std::string Doc(const std::string& name) {
  std::ifstream in(train_test::Env("SLUICE_SOURCE_ROOT") + "/docs/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_FALSE(ss.str().empty()) << name;
  return ss.str();
}

// `flag` as a whole word of `text` (so --threads is not found inside --max-threads).
bool HasFlag(const std::string& text, const std::string& flag) {
  for (size_t at = text.find(flag); at != std::string::npos; at = text.find(flag, at + 1)) {
    const size_t end = at + flag.size();
    const bool left = at == 0 || text[at - 1] == ' ' || text[at - 1] == '`' || text[at - 1] == ',';
    const bool right = end == text.size() || !(std::isalnum(text[end]) || text[end] == '-');
    if (left && right) return true;
  }
  return false;
}

// The flags of LoaderOptions' table but the feature arguments' (docs/features.md lists those);
// with `augmentation` false also without the augmentation options' (docs/features.md has those).
std::vector<std::string> LoaderFlags(bool augmentation = true) {
  loader::LoaderOptions lo;
  std::vector<std::string> flags;
  ForEachLeaf(lo, [&](const std::string& path, const FieldInfo& f, auto&) {
    const bool nested = path.find('.') != std::string::npos;
    const bool computer = path.rfind("features.", 0) == 0;  // docs/features.md has them
    const bool augment = nested && path.find("_options.") != std::string::npos;
    if (f.flag != nullptr && !computer && (augmentation || !augment)) flags.emplace_back(f.flag);
  });
  return flags;
}

TEST(OptionsTables, EveryFlagIsInTheToolsHelp) {
  TrainOptions o;
  loader::FeatureArgs fa;
  const std::string train = Help(train_test::Env("SLUICE_TRAIN"));
  for (const std::string& flag : tools::Flags(o)) {
    if (flag.rfind("--", 0) == 0) {
      EXPECT_TRUE(HasFlag(train, flag)) << "sluice-train " << flag;
    }
  }
  const std::vector<std::string> features = tools::Flags(fa);
  const std::string bench = Help(train_test::Env("SLUICE_BENCH") + " epoch");
  for (const std::string& flag : LoaderFlags()) EXPECT_TRUE(HasFlag(bench, flag)) << flag;
  for (const std::string& command :
       {train_test::Env("SLUICE_TRAIN"), train_test::Env("SLUICE_BENCH") + " epoch",
        train_test::Env("SLUICE_BENCH") + " features", train_test::Env("SLUICE_FEATURES"),
        train_test::Env("SHARDIFY") + " audio"}) {
    const std::string help = Help(command);
    for (const std::string& flag : features)
      EXPECT_TRUE(HasFlag(help, flag)) << command << " " << flag;
    EXPECT_TRUE(HasFlag(help, "--features")) << command;
  }
}

TEST(OptionsTables, EveryFlagIsDocumented) {
  TrainOptions o;
  loader::FeatureArgs fa;
  const std::string train = Doc("train.md"), features = Doc("features.md"),
                    loader = Doc("loader.md");
  // docs/train.md: the run's own flags; the loader's are docs/loader.md's, checked below.
  VisitFields(o, [&](const FieldInfo& f, auto&) {
    if (f.flag != nullptr && std::string(f.flag).rfind("--", 0) == 0) {
      EXPECT_TRUE(HasFlag(train, f.flag)) << "docs/train.md " << f.flag;
    }
  });
  features::SpecAugmentOptions sa;
  features::SpeedPerturbOptions sp;
  std::vector<std::string> in_features = tools::Flags(fa);
  for (const std::string& flag : tools::Flags(sa)) in_features.push_back(flag);
  for (const std::string& flag : tools::Flags(sp)) in_features.push_back(flag);
  for (const std::string& flag : in_features)
    EXPECT_TRUE(HasFlag(features, flag)) << "docs/features.md " << flag;
  for (const std::string& flag : LoaderFlags(false))
    EXPECT_TRUE(HasFlag(loader, flag)) << "docs/loader.md " << flag;
}

}  // namespace
}  // namespace sluice::train
