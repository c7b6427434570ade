// The sluice-train loop, top to bottom: open the dataset and its tokenizer, build the model on the
// device's engine (engine.h: CPU replicas or the CUDA model), then for each epoch take the
// batches (held-out records are out of the training loader's plan), step (forward, backward,
// gradients combined over ranks, clip, AdamW on the warm-up/decay schedule), log; at the end of
// each epoch evaluate greedy CTC decoding (CER/WER) and checkpoint. docs/train.md describes it for
// users.
#pragma once

#include "base/status.h"
#include "trainer/options.h"

namespace sluice::train {

// Runs the whole training described by `o`: step lines and epoch summaries on stdout (or one JSON
// object per epoch with o.json). Errors name the file or record and, where the user can fix
// something, end with a HINT.
Status RunTraining(const TrainOptions& o);

}  // namespace sluice::train
