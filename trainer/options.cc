#include "trainer/options.h"

#include <nlohmann/json.hpp>

#include "loader/options_json.h"
#include "shards/checksum.h"

namespace sluice::train {

Status TrainLoaderOptions(const TrainOptions& o, bool training, loader::LoaderOptions* lo) {
  const loader::LoaderOptions& given = o.loader;
  const loader::LoaderOptions defaults;
  if (given.kind == loader::FeatureKind::kRaw)
    return Status::InvalidArgument(
        "kind raw (--features raw): the model takes feature frames, not waveforms. HINT: "
        "--features fbank, spectrogram or precomputed");
  if (given.dtype != loader::DType::kFloat32)
    return Status::InvalidArgument(
        std::string("dtype ") + loader::DTypeName(given.dtype) +
        " (--dtype): the model takes float32 features (it computes in bf16 on the GPU from "
        "them). HINT: leave --dtype out, or --dtype float32");
  if (given.packing.seq_len > 0)
    return Status::InvalidArgument(
        "packing.seq_len " + std::to_string(given.packing.seq_len) +
        " (--seq-len): sluice-train trains a row per utterance (CTC); packed sequences are for "
        "language models. HINT: leave --seq-len out");
  if (given.rank != defaults.rank || given.world != defaults.world)
    return Status::InvalidArgument(
        "rank " + std::to_string(given.rank) + " of world " + std::to_string(given.world) +
        ": sluice-train takes its rank and world size from the launcher (mpirun, srun, "
        "torchrun), not from its options");
  *lo = given;
  lo->seed = o.seed;  // the run's seed keys the model's initialisation and the loader alike
  lo->batching.shuffle = training;
  // Augmentation is for training only: the evaluation sees the features as they are.
  lo->spec_augment = training && given.spec_augment;
  lo->speed_perturb = training && given.speed_perturb;
  if (!training) {
    lo->waveform_augment = {};
    lo->noise_data.clear();
    lo->rir_data.clear();
    lo->babble_data.clear();
  }
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
                             int sample_rate, const std::vector<uint64_t>& data_content) {
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
  nlohmann::json loader = loader::LoaderConfigJson(lo, sample_rate);
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
  // The computers' fields that the feature arguments set (the run records them resolved).
  for (const char* computer : {"fbank", "spectrogram"})
    flags["loader"][computer] = flags["loader"]["features"][computer];
  const nlohmann::json::json_pointer at(path);
  const std::string flag = flags.contains(at) && flags[at].is_string()
                               ? " (flag " + flags[at].get<std::string>() + ")"
                               : std::string();
  return Status::InvalidArgument(checkpoint + ": written by a run with other options: " + diff +
                                 flag +
                                 ". HINT: resume with the options that wrote the checkpoint");
}

}  // namespace sluice::train
