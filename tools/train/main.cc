// sluice-train: trains the CTC speech encoder of issue 7 on a shardify dataset (docs/train.md).
//
//   sluice-train DATASET --device cpu --preset tiny [--epochs E] [--steps N] [--lr X] [--seed S]
//                [--threads T] [--max-frames N] [--eval DIR | --eval-fraction F]
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
#include "train_options.h"
#include "trainer/trainer.h"

int main(int argc, char** argv) {
  sluice::train::TrainOptions o;
  CLI::App app{"sluice-train: trains a CTC transformer speech model on a shardify dataset (docs/train.md)"};
  app.add_option("dataset", o.dataset, "dataset directory (shardify audio ... --tokenizer ...)")->required();
  app.add_option("--device", o.device, "cpu, or cuda (the bf16 GPU model, NCCL across ranks; docs/train.md)")->capture_default_str();
  app.add_option("--preset", o.preset, "model size: tiny (~55 k parameters) or small (~11 M)")
      ->check(CLI::IsMember({"tiny", "small"}))
      ->capture_default_str();
  app.add_option("--epochs", o.epochs, "passes over the training rows (default 10; unlimited with --steps)")
      ->check(CLI::Range(uint64_t{1}, UINT64_MAX));
  app.add_option("--steps", o.steps, "stop after this many optimizer steps; the learning-rate decay ends there")
      ->check(CLI::Range(int64_t{1}, INT64_MAX));
  app.add_option("--lr", o.lr, "peak learning rate")->capture_default_str();
  app.add_option("--min-lr-ratio", o.min_lr_ratio, "final learning rate as a fraction of --lr")
      ->capture_default_str();
  app.add_option("--warmup", o.warmup_steps, "linear warm-up steps (default: a tenth of the run, at most 500)");
  app.add_option("--weight-decay", o.weight_decay, "AdamW decoupled weight decay")->capture_default_str();
  app.add_option("--clip", o.clip, "gradient global-norm cap; 0 = off")->capture_default_str();
  app.add_option("--dropout", o.dropout, "residual dropout rate")->check(CLI::Range(0.0, 0.95))->capture_default_str();
  app.add_option("--activation", o.activation, "feed-forward nonlinearity: gelu, or swish (SiLU)")
      ->check(CLI::IsMember({"gelu", "swish"}))
      ->capture_default_str();
  app.add_option("--seed", o.seed, "initialisation, shuffles and dropout masks")->capture_default_str();
  app.add_option("--threads", o.threads, "model threads, each a replica on a share of the batch")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option("--loader-threads", o.loader_threads, "loader decode threads (0 = all cores)")
      ->check(CLI::Range(0, 256))
      ->capture_default_str();
  app.add_option("--max-frames", o.max_frames, "feature frames per batch (0 = no cap)")->capture_default_str();
  app.add_option("--max-batch-size", o.max_batch_size, "utterances per batch (0 = no cap)");
  auto* eval = app.add_option("--eval", o.eval_dataset, "held-out dataset evaluated after each epoch");
  app.add_option("--eval-fraction", o.eval_fraction,
                 "without --eval: fraction of DATASET's records held out by key hash (0 = no evaluation)")
      ->check(CLI::Range(0.0, 0.9))
      ->excludes(eval)
      ->capture_default_str();
  app.add_option("--eval-examples", o.eval_examples, "reference/hypothesis pairs printed per evaluation")
      ->capture_default_str();
  app.add_option("--features", o.feature_kind, "fbank, spectrogram, or precomputed (shardify --features)")
      ->check(CLI::IsMember({"fbank", "spectrogram", "precomputed"}))
      ->capture_default_str();
  sluice::tools::AddFeatureOptions(&app, &o.features);
  app.add_option("--cmvn", o.cmvn, "per-utterance mean and variance normalisation of the features")
      ->capture_default_str();
  sluice::features::SpecAugmentOptions& sa = o.spec_augment_options;
  app.add_flag("--spec-augment", o.spec_augment,
               "SpecAugment masks on the training batches, keyed by seed, epoch and record (never on evaluation)");
  app.add_option("--freq-masks", sa.num_freq_masks, "SpecAugment: frequency masks per utterance")
      ->check(CLI::Range(0, 64))
      ->capture_default_str();
  app.add_option("--max-freq-width", sa.max_freq_width, "SpecAugment: a frequency mask's width is uniform in [0, this] bins")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  app.add_option("--time-masks", sa.num_time_masks, "SpecAugment: time masks per utterance")
      ->check(CLI::Range(0, 64))
      ->capture_default_str();
  app.add_option("--max-time-width", sa.max_time_width, "SpecAugment: a time mask's width is uniform in [0, this] frames")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  app.add_option("--max-time-ratio", sa.max_time_ratio, "SpecAugment: a time mask covers at most this fraction of the frames")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--mask-value", sa.fill_value, "SpecAugment: value of masked cells (0 = the mean after --cmvn)")
      ->capture_default_str();
  app.add_option("--checkpoint", o.checkpoint,
                 "checkpoint file, written after each epoch and at the end; {step} in the name keeps one per step, "
                 "{rank} one per rank (else rank 0 writes)");
  app.add_option("--checkpoint-every", o.checkpoint_every, "also checkpoint every N steps")
      ->check(CLI::Range(int64_t{0}, INT64_MAX));
  app.add_option("--resume", o.resume, "continue exactly from this checkpoint (same options and rank count as the run that wrote it; {rank} as in --checkpoint)");
  app.add_flag("--json", o.json, "one JSON object per epoch on stdout (epoch, loss, cer, wer, wall_seconds, ...)");
  app.add_option("--log-every", o.log_every, "text mode: a step line every N steps (0 = none)")
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (app.count("--steps") > 0 && app.count("--epochs") == 0) o.epochs = UINT64_MAX;

  const sluice::Status s = sluice::train::RunTraining(o);
  if (!s.ok()) {
    std::fprintf(stderr, "sluice-train: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
