#include "trainer/options.h"

#include <nlohmann/json.hpp>

#include "loader/options_json.h"
#include "shards/checksum.h"

namespace sluice::train {

Status TrainLoaderOptions(const TrainOptions& o, const std::string& dataset, int sample_rate,
                          bool has_precomputed, bool training, loader::LoaderOptions* lo) {
  if (o.feature_kind == loader::FeatureKind::kPrecomputed) {
    if (!has_precomputed)
      return Status::InvalidArgument(dataset +
                                     ": --features precomputed, but the dataset has none. "
                                     "HINT: shardify audio --features fbank, or train with "
                                     "--features fbank");
    lo->kind = loader::FeatureKind::kPrecomputed;
    lo->use_precomputed = true;
  } else {
    loader::FeatureArgs a = o.features;
    a.kind = loader::FeatureKindName(o.feature_kind);
    loader::FeatureConfig fc;
    SLUICE_RETURN_IF_ERROR(loader::MakeFeatureConfig(a, sample_rate, &fc));
    lo->kind = fc.is_fbank ? loader::FeatureKind::kFbank : loader::FeatureKind::kSpectrogram;
    lo->fbank = fc.fbank;
    lo->spectrogram = fc.spectrogram;
    lo->use_precomputed = false;  // the flags above decide the features, not what shardify stored
  }
  lo->cmvn = o.cmvn;
  // Augmentation is for training only: the evaluation sees the features as they are.
  lo->spec_augment = training && o.spec_augment;
  lo->spec_augment_options = o.spec_augment_options;
  lo->dtype = loader::DType::kFloat32;
  lo->batching.shuffle = training;
  lo->batching.max_frames = o.max_frames;
  lo->batching.max_batch_size = o.max_batch_size;
  lo->batching.max_padded_tokens = o.max_padded_tokens;
  lo->seed = o.seed;
  lo->threads = o.loader_threads;
  lo->storage = o.storage;
  return Status::OK();
}

namespace {

// The data check of CheckRunConfig: "data_content" of both runs, source by source.
Status CheckRunData(const nlohmann::json& now, const nlohmann::json& stored,
                    const std::string& checkpoint, const std::vector<std::string>& sources) {
  std::string names;
  for (size_t i = 0; i < sources.size(); ++i) names += (i ? " + " : "") + sources[i];
  const auto found = stored.find("data_content");
  if (found == stored.end() || !found->is_array())
    return Status::InvalidArgument(
        checkpoint +
        ": written by a sluice-train that did not record which data it trained on, so this run "
        "cannot tell whether " +
        names +
        " is that data. HINT: start a fresh run, or resume with the sluice-train that wrote it");
  const nlohmann::json& then = *found;
  const nlohmann::json& here = now.at("data_content");
  const std::string hint =
      ". HINT: resume on the data the checkpoint was trained on (a copy at another path or URL "
      "will do: its content counts, not where it lies); other data needs a fresh run";
  if (here.size() != then.size())
    return Status::InvalidArgument(checkpoint + ": written by a run on " +
                                   std::to_string(then.size()) +
                                   " dataset(s), this run trains on " +
                                   std::to_string(here.size()) + " (" + names + ")" + hint);
  for (size_t i = 0; i < here.size(); ++i) {
    if (here[i] == then[i]) continue;
    const std::string name = i < sources.size() ? sources[i] : "source " + std::to_string(i + 1);
    return Status::InvalidArgument(
        checkpoint + ": written by a run on other data: " + name + " holds content " +
        here[i].dump() + ", the checkpoint's run trained on " + then[i].dump() +
        (here.size() > 1
             ? " (source " + std::to_string(i + 1) + " of " + std::to_string(here.size()) + ")"
             : std::string()) +
        ": another dataset, not a copy of that one" + hint);
  }
  return Status::OK();
}

}  // namespace

nlohmann::json RunConfigJson(const TrainOptions& o, const loader::LoaderOptions& lo,
                             const std::vector<uint64_t>& data_content) {
  nlohmann::json run = loader::ToJson(o, loader::Fields::kWhat);
  // Resolved: a separate --eval dataset leaves the training plan whole whatever the fraction, and
  // the masks' options matter only with --spec-augment (the loader's part has them then).
  run["eval_fraction"] = o.eval_dataset.empty() ? o.eval_fraction : 0.0;
  // --data: the weights decide a mixture's epochs; the directories, as DATASET's, may move
  // (a malformed spec fails TrainMixture before any run config is made).
  if (run.contains("data")) {
    nlohmann::json weights = nlohmann::json::array();
    for (const std::string& spec : o.data) {
      loader::MixSource s;
      weights.push_back(loader::ParseMixSource(spec, &s).ok() ? s.weight : 0.0);
    }
    run["data"] = std::move(weights);
  }
  nlohmann::json content = nlohmann::json::array();
  for (uint64_t c : data_content) content.push_back(shards::ChecksumHex(c));
  run["data_content"] = std::move(content);
  nlohmann::json loader = loader::LoaderConfigJson(lo);
  // A checkpoint is shared by the ranks (rank 0 writes it), and resumes at any world size (the
  // loader's elastic resume; the config's "world" records the one that wrote it).
  loader.erase("rank");
  loader.erase("world");
  run["loader"] = std::move(loader);
  return run;
}

namespace {

// --steps alone runs unlimited epochs, UINT64_MAX inside (tools/train/main.cc): messages say
// "unlimited", never 18446744073709551615. Both sides alike, so the comparison is unchanged.
nlohmann::json Shown(nlohmann::json run) {
  if (run.is_object() && run.contains("epochs") && run["epochs"].is_number_unsigned() &&
      run["epochs"].get<uint64_t>() == UINT64_MAX)
    run["epochs"] = "unlimited";
  return run;
}

}  // namespace

Status CheckRunConfig(const nlohmann::json& now, const nlohmann::json& stored,
                      const std::string& checkpoint, const std::vector<std::string>& sources) {
  if (!stored.contains("loader"))
    return Status::InvalidArgument(
        checkpoint +
        ": written by a sluice-train that recorded only some of its feature options, "
        "so this run cannot tell whether it would train on the same features. HINT: start a "
        "fresh run, or resume with the sluice-train that wrote it");
  SLUICE_RETURN_IF_ERROR(CheckRunData(now, stored, checkpoint, sources));
  // Checkpoints written before elastic resume record the loader's world here too.
  nlohmann::json then = stored;
  if (then["loader"].is_object()) then["loader"].erase("world");
  std::string path;
  const std::string diff = loader::FirstDifference(Shown(now), Shown(then), "checkpoint", &path);
  if (diff.empty()) return Status::OK();
  // The flag that sets the field, where it has one of its own.
  nlohmann::json flags = loader::FlagsJson(TrainOptions(), loader::Fields::kWhat);
  flags["loader"] = loader::FlagsJson(loader::LoaderOptions(), loader::Fields::kWhat);
  const nlohmann::json::json_pointer at(path);
  const std::string flag = flags.contains(at) && flags[at].is_string()
                               ? " (flag " + flags[at].get<std::string>() + ")"
                               : std::string();
  return Status::InvalidArgument(checkpoint + ": written by a run with other options: " + diff +
                                 flag +
                                 ". HINT: resume with the options that wrote the checkpoint");
}

}  // namespace sluice::train
