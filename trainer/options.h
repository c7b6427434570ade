// Everything a sluice-train run is told, with defaults and units. tools/train/main.cc fills it
// from the command line; trainer.h runs it.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "base/fields.h"
#include "base/status.h"
#include "loader/options.h"

namespace sluice::train {

// The loader options a run starts from: the loader's defaults but where training wants others.
inline loader::LoaderOptions TrainLoaderDefaults() {
  loader::LoaderOptions lo;
  lo.batching.max_frames = 4000;  // 40 s of 10 ms fbank frames per batch
  // Raw log-mel values sit around +-15, which stalls the tiny model at the all-blank plateau.
  lo.cmvn = loader::Cmvn::kMeanVar;
  lo.threads = 1;
  lo.use_precomputed = false;  // --features decides, as on every tool's command line
  return lo;
}

struct TrainOptions {
  std::string dataset;            // shardify output directory (or its http(s):// or s3:// URL,
                                  // docs/remote.md) with token ids
  std::vector<std::string> data;  // or "DIR:WEIGHT" sources of a weighted mixture (--data,
                                  // repeated; loader::ParseMixSource); the run records their
                                  // weights and contents, not their paths (RunConfigJson):
                                  // directories may move
  uint64_t mix_records = 0;       // records per epoch of the mixture (0 = the sources' sum)
  std::string device = "cpu";     // "cpu", "cuda" or "simt" (device_backend.h); not part of the
                                  // run options: a checkpoint resumes on either device
  std::string preset = "tiny";    // "tiny" or "small" (reference/ ModelConfig)

  // --- what the run computes: a resume must repeat these (RunConfigJson) ---
  uint64_t epochs = 10;           // passes over the training rows
  int64_t steps = 0;              // stop after this many optimizer steps (0 = after the epochs);
                                  // also where the learning-rate decay ends
  double lr = 3e-3;               // peak learning rate (after warm-up)
  double min_lr_ratio = 0.1;      // the decay ends at lr * this
  int64_t warmup_steps = -1;      // linear warm-up; -1 = a tenth of the run's steps, at most 500
  double weight_decay = 0.01;     // AdamW, matrices and conv kernels only
  double clip = 1.0;              // global gradient norm cap (0 = no clipping)
  double dropout = 0.1;           // residual dropout rate
  std::string activation = "gelu";  // feed-forward nonlinearity: "gelu" or "swish"
  uint64_t seed = 1;              // initialisation, shuffles, dropout masks
  int replicas = 1;               // model replicas (threads) splitting each batch; changes the
                                  // float summation order, hence part of the run
  std::string eval_dataset;       // held-out dataset; empty: hold out eval_fraction of DATASET
  double eval_fraction = 0.1;     // by key hash (held_out.h); 0 with no eval_dataset: no evaluation
  // The loader's options, from the flags of sluice-bench epoch (tools/common/loader_flags.h), for
  // the training loader and, without augmentation and shuffle, the evaluation one. The trainer
  // sets seed (from `seed`), rank and world (from the launcher), batching.shuffle (training
  // only) and select (the held-out split); TrainLoaderOptions refuses what the model cannot
  // take (raw waveforms, features other than float32, packed text).
  loader::LoaderOptions loader = TrainLoaderDefaults();

  // --- how it runs: free to change between a run and its resume ---
  std::string checkpoint;         // written at each epoch end and at the end; "{step}" in the name
                                  // is replaced by the step, keeping one file per checkpoint
  int64_t checkpoint_every = 0;   // also every this many steps (0 = only epoch ends and the end)
  std::string resume;             // checkpoint to continue from
  bool json = false;              // one JSON object per epoch on stdout instead of text
  int64_t log_every = 1;          // text mode: a step line every this many steps (0 = none)
  int64_t eval_examples = 2;      // text mode: reference/hypothesis pairs printed per evaluation
};

// TrainOptions' table (base/fields.h). `loader` is LoaderOptions' own table: sluice-train adds
// its flags as sluice-bench epoch does (tools::AddLoaderOptions), and the run records the
// training loader's options resolved (RunConfigJson).
template <OptionsOf<TrainOptions> O, class V>
void VisitFields(O& o, V&& v) {
  using enum Affects;
  v(FieldInfo{"dataset", "dataset",
              "dataset directory or http(s)://, s3:// URL (shardify audio ... --tokenizer ...); "
              "the run records its content checksum, not its path, so a moved copy resumes",
              kHow},
    o.dataset);
  v(FieldInfo{"device", "--device",
              "cpu, cuda (the bf16 GPU model; docs/train.md), or simt (that CUDA model run on "
              "the CPU through the SIMT layer, for tests; docs/gpu.md); a checkpoint resumes on "
              "any",
              kHow},
    o.device);
  v(FieldInfo{"preset", "--preset", "model size: tiny (~55 k parameters) or small (~11 M)"},
    o.preset);
  v(FieldInfo{"epochs", "--epochs", "passes over the training rows (unlimited with --steps alone)",
              kWhat, 1},
    o.epochs);
  v(FieldInfo{"steps", "--steps",
              "stop after this many optimizer steps; the learning-rate decay "
              "ends there (0 = after the epochs)",
              kWhat, 0},
    o.steps);
  v(FieldInfo{"lr", "--lr", "peak learning rate"}, o.lr);
  v(FieldInfo{"min_lr_ratio", "--min-lr-ratio", "final learning rate as a fraction of --lr"},
    o.min_lr_ratio);
  v(FieldInfo{"warmup_steps", "--warmup",
              "linear warm-up steps (-1: a tenth of the run, at most 500)",
              kWhat, -1},
    o.warmup_steps);
  v(FieldInfo{"weight_decay", "--weight-decay", "AdamW decoupled weight decay"}, o.weight_decay);
  v(FieldInfo{"clip", "--clip", "gradient global-norm cap; 0 = off", kWhat, 0}, o.clip);
  v(FieldInfo{"dropout", "--dropout", "residual dropout rate", kWhat, 0, 0.95}, o.dropout);
  v(FieldInfo{"activation", "--activation", "feed-forward nonlinearity: gelu, or swish (SiLU)"},
    o.activation);
  v(FieldInfo{"seed", "--seed", "initialisation, shuffles and dropout masks"}, o.seed);
  v(FieldInfo{"replicas", "--replicas", "model replicas (threads), each on a share of the batch",
              kWhat, 1, 256},
    o.replicas);
  v(FieldInfo{"data", "--data",
              "DIR:WEIGHT, repeated (DIR may be a URL): train on a weighted mixture of datasets "
              "instead of DATASET (docs/loader.md, \"Weighted mixing\")"},
    o.data);
  v(FieldInfo{"mix_records", "--mix-records",
              "records per epoch of a --data mixture (0 = the sources' sum)"},
    o.mix_records);
  v(FieldInfo{"eval_dataset", "--eval",
              "held-out dataset (directory or URL) evaluated after each epoch (evaluation "
              "only: the training batches do not depend on it)",
              kHow},
    o.eval_dataset);
  v(FieldInfo{"eval_fraction", "--eval-fraction",
              "without --eval: fraction of DATASET's records "
              "held out by key hash (0 = no evaluation)",
              kWhat, 0, 0.9},
    o.eval_fraction);
  v(FieldInfo{"loader", nullptr, "the loader's options (docs/loader.md)"}, o.loader);
  v(FieldInfo{"checkpoint", "--checkpoint",
              "checkpoint file, written after each epoch and at the "
              "end; {step} in the name keeps one per step, {rank} one per rank (else rank 0 "
              "writes)",
              kHow},
    o.checkpoint);
  v(FieldInfo{"checkpoint_every", "--checkpoint-every", "also checkpoint every N steps", kHow, 0},
    o.checkpoint_every);
  v(FieldInfo{"resume", "--resume",
              "continue exactly from this checkpoint (same options and rank "
              "count as the run that wrote it; {rank} as in --checkpoint)",
              kHow},
    o.resume);
  v(FieldInfo{.key = "json",
              .flag = "--json",
              .help = "one JSON object per epoch on stdout (epoch, loss, cer, wer, wall_seconds, "
                      "...)",
              .affects = kHow,
              .is_switch = true},
    o.json);
  v(FieldInfo{"log_every", "--log-every", "text mode: a step line every N steps (0 = none)", kHow},
    o.log_every);
  v(FieldInfo{"eval_examples", "--eval-examples",
              "reference/hypothesis pairs printed per evaluation",
              kHow},
    o.eval_examples);
}

// The loader options that `o` decides, for training (shuffled, augmented: SpecAugment, speed
// perturbation) or evaluation (file order, neither), from o.loader with the run's seed. Placement
// (rank, world) and the record filter are the caller's. InvalidArgument naming the option for
// what the model cannot take: raw waveforms (kind raw), features other than float32 (dtype),
// packed sequences (packing.seq_len), or rank and world set other than by the launcher.
Status TrainLoaderOptions(const TrainOptions& o, bool training, loader::LoaderOptions* lo);

// The configuration a resumed run must share with the run that wrote the checkpoint, as stored
// in the checkpoint's config "run": the "what" fields of `o` and, resolved (defaults applied,
// the dataset's `sample_rate`, the options of the feature kind in use), the "what" fields of the
// training loader's options `lo` (loader/options_json.h's LoaderConfigJson). Made from the tables,
// so every field that changes the data or results is in it. The data itself is in it as
// "data_content": `data_content` holds the DatasetFingerprint (datasets.h) of each training source,
// DATASET's or --data's in their order (with their weights in "data"), so that the same options on
// another dataset do not pass for the same run, while the dataset may move.
nlohmann::json RunConfigJson(const TrainOptions& o, const loader::LoaderOptions& lo,
                             int sample_rate, const std::vector<uint64_t>& data_content);

// OK when `stored` (a checkpoint's "run") equals RunConfigJson of this run, else InvalidArgument
// naming `checkpoint` and the first differing field with both values; other data is named by
// `sources` (the training sources' display names, in data_content's order), and a checkpoint that
// recorded no data_content is refused with a HINT, as one that recorded no loader options.
Status CheckRunConfig(const nlohmann::json& now, const nlohmann::json& stored,
                      const std::string& checkpoint, const std::vector<std::string>& sources);

}  // namespace sluice::train
