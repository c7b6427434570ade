// Everything a sluice-train run is told, with defaults and units. main.cc fills it from the
// command line; trainer.h runs it.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "feature_options.h"
#include "features/augment.h"

namespace sluice::train {

struct TrainOptions {
  std::string dataset;            // shardify output directory with token ids
  std::string device = "cpu";     // "cpu" or "cuda" (builds with gpu/model); not part of the
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
  int threads = 1;                // model replicas (threads) splitting each batch; changes the
                                  // float summation order, hence part of the run
  uint64_t max_frames = 4000;     // loader: frames per batch (40 s of 10 ms fbank frames)
  uint32_t max_batch_size = 0;    // loader: rows per batch (0 = no cap)
  std::string eval_dataset;       // held-out dataset; empty: hold out eval_fraction of DATASET
  double eval_fraction = 0.1;     // by key hash (held_out.h); 0 with no eval_dataset: no evaluation
  std::string feature_kind = "fbank";  // "fbank", "spectrogram" or "precomputed"
  tools::FeatureArgs features;    // Kaldi-named flags (tools/common/feature_options.h)
  bool cmvn = true;               // per-utterance mean and variance normalisation: raw log-mel
                                  // values sit around +-15, which stalls the tiny model at the
                                  // all-blank plateau
  bool spec_augment = false;      // SpecAugment masks on the training batches (never evaluation),
                                  // drawn by the loader from (seed, epoch, record)
  features::SpecAugmentOptions spec_augment_options;  // counts, widths (bins, frames), fill

  // --- how it runs: free to change between a run and its resume ---
  int loader_threads = 1;         // decode threads of the loader (0 = all cores)
  std::string checkpoint;         // written at each epoch end and at the end; "{step}" in the name
                                  // is replaced by the step, keeping one file per checkpoint
  int64_t checkpoint_every = 0;   // also every this many steps (0 = only epoch ends and the end)
  std::string resume;             // checkpoint to continue from
  bool json = false;              // one JSON object per epoch on stdout instead of text
  int64_t log_every = 1;          // text mode: a step line every this many steps (0 = none)
  int64_t eval_examples = 2;      // text mode: reference/hypothesis pairs printed per evaluation
};

// The options a resumed run must share with the run that wrote the checkpoint (model, data,
// schedule, seed, replicas), as the JSON stored in the checkpoint's config.
nlohmann::json RunConfigJson(const TrainOptions& o);

}  // namespace sluice::train
