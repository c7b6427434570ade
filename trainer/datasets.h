// The datasets a training run reads: the training set with its tokenizer, and the loader options
// of its training and evaluation passes (--eval DIR, or --eval-fraction of the training set's
// records held out by key hash, held_out.h).
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "features/tokenizer.h"
#include "loader/options.h"
#include "shards/manifest.h"
#include "storage/options.h"
#include "trainer/engine.h"
#include "trainer/options.h"

namespace sluice::train {

// A shardify audio dataset whose records carry token ids, with the tokenizer that made them.
struct TokenizedDataset {
  std::string dir;   // the directory or URL as given (storage/open.h)
  std::string name;  // dir for messages: a URL's password hidden (storage::RedactUrl)
  shards::Manifest manifest;
  std::unique_ptr<features::Tokenizer> tokenizer;
  uint64_t fingerprint = 0;  // TokenizerFingerprint of manifest.tokenizer
  uint64_t content = 0;      // DatasetFingerprint of manifest
};

// shards::ManifestFingerprint: a copy at another path or URL has the same one, so a resume is
// bound to the data, not to where it lies.
uint64_t DatasetFingerprint(const shards::Manifest& m);

// The DatasetFingerprint of the dataset at `location` (its manifest alone, as OpenTokenized).
Status ReadDatasetFingerprint(const std::string& location, const storage::StorageOptions& storage,
                              uint64_t* content);

// Opens the manifest and tokenizer of the dataset at `location`: a directory, or an http(s):// or
// s3:// URL read with `storage` (its block cache is left to the loader: these are two small
// files). InvalidArgument with a HINT when the dataset is not audio or carries no token ids.
Status OpenTokenized(const std::string& location, const storage::StorageOptions& storage,
                     TokenizedDataset* d);

// Loader options for training (shuffled) or evaluation (file order, so every epoch's evaluation
// sees the same rows in the same batches), each rank reading its partition; Loader::Open
// resolves their feature options at the dataset's rate.
Status MakeLoaderOptions(const TrainOptions& o, bool training, const Ranks& ranks,
                         loader::LoaderOptions* lo);

// --eval-fraction must leave records on both sides: a loader with none is an error that would
// otherwise name LoaderOptions::select rather than the flag.
// `held` (may be null): how many records it holds out. `location` as in OpenTokenized.
Status CheckHeldOut(const std::string& location, const storage::StorageOptions& storage,
                    double fraction, uint64_t* held = nullptr);

// The training data: --data's weighted mixture, else DATASET alone (one source of weight 1).
// InvalidArgument for neither or both, or a bad DIR:WEIGHT.
Status TrainMixture(const TrainOptions& o, loader::MixOptions* mix);

}  // namespace sluice::train
