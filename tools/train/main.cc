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
#include <cstdio>
#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

#include "feature_options.h"
#include "options_cli.h"
#include "trainer/options.h"
#include "trainer/trainer.h"

int main(int argc, char** argv) {
  sluice::train::TrainOptions o;
  CLI::App app{
      "sluice-train: trains a CTC transformer speech model on a shardify dataset (docs/train.md)"};
  // Every flag but the feature options' comes from TrainOptions' table (trainer/options.h).
  sluice::tools::AddOptions(&app, &o);
  // DATASET, or --data DIR:WEIGHT ... (TrainMixture says which is missing).
  app.get_option("--preset")->check(CLI::IsMember({"tiny", "small"}));
  app.get_option("--activation")->check(CLI::IsMember({"gelu", "swish"}));
  // The loader's kinds but raw: the model takes feature frames, not waveforms.
  app.get_option("--features")->check(CLI::IsMember({"fbank", "spectrogram", "precomputed"}));
  app.get_option("--eval-fraction")->excludes(app.get_option("--eval"));
  sluice::tools::AddFeatureOptions(&app, &o.features);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
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
