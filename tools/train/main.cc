// sluice-train: trains a CTC speech encoder (docs/model.md) on a shardify dataset (docs/train.md).
//
//   sluice-train DATASET --device cpu --preset tiny [--epochs E] [--steps N] [--lr X] [--seed S]
//                [--replicas R] [--threads T] [--max-frames N] [--eval DIR | --eval-fraction F]
//                [--checkpoint FILE [--checkpoint-every N]] [--resume FILE] [--json]
//   mpirun -np R sluice-train ...    data parallel over R processes (also srun, torchrun-style
//                                    variables with MPI underneath); rank 0 prints and checkpoints
//
// Exit status: 0 done, 1 a data, checkpoint or option error (printed with the file it concerns),
// 2 bad command line.
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

#include "loader_flags.h"
#include "options_cli.h"
#include "trainer/options.h"
#include "trainer/trainer.h"

int main(int argc, char** argv) {
  sluice::train::TrainOptions o;
  CLI::App app{
      "sluice-train: trains a CTC transformer speech model on a shardify dataset (docs/train.md)"};
  // The run's flags from TrainOptions' table (trainer/options.h); the loader's from LoaderOptions'
  // table, as sluice-bench epoch's (tools/common/loader_flags.h).
  sluice::tools::AddOptions(
      &app, &o, [](const sluice::FieldInfo& f) { return std::string_view(f.key) != "loader"; });
  sluice::tools::LoaderFlagUse use;
  use.own = {"seed"};  // --seed keys the model, the shuffles and the loader's draws alike
  for (const char* key : {"rank", "world"})
    use.refused.emplace_back(key,
                             "set by the launcher: sluice-train reads its rank and the world size "
                             "from mpirun, srun or torchrun's environment (docs/train.md)");
  use.refused.emplace_back(
      "packing",
      "sluice-train trains a row per utterance (CTC); packed sequences are for "
      "language models");
  use.refused.emplace_back(
      "conversation",
      "sluice-train trains ASR on audio datasets; conversation datasets are read by a "
      "speech-LLM's loop through the loader (docs/conversations.md)");
  sluice::tools::AddLoaderOptions(&app, &o.loader, use);
  // The loader's kinds but raw: the model takes feature frames, not waveforms.
  app.get_option("--features")->check(CLI::IsMember({"fbank", "spectrogram", "precomputed"}));
  // DATASET, or --data DIR:WEIGHT ... (TrainMixture says which is missing).
  app.get_option("--preset")->check(CLI::IsMember({"tiny", "small"}));
  app.get_option("--activation")->check(CLI::IsMember({"gelu", "swish"}));
  app.get_option("--eval-fraction")->excludes(app.get_option("--eval"));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return sluice::tools::CommandLineExit(app, e);
  }
  // --steps alone bounds the run; --steps 0 means "after the epochs", as left out.
  if (o.steps > 0 && app.count("--epochs") == 0) o.epochs = UINT64_MAX;

  const sluice::Status s = sluice::train::RunTraining(o);
  if (!s.ok()) {
    std::fprintf(stderr, "sluice-train: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
