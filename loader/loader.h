// Loader: the library a training binary links to turn a shard dataset into padded batches
// (docs/loader.md). One Loader per rank:
//
//   std::unique_ptr<sluice::Loader> loader;
//   SLUICE_RETURN_IF_ERROR(sluice::Loader::Open(dir, options, &loader));
//   for (uint64_t epoch = state.epoch; ; ++epoch) {
//     SLUICE_RETURN_IF_ERROR(epoch == state.epoch ? loader->Start(state) : loader->Start(epoch));
//     const sluice::loader::Batch* batch;
//     while (true) {
//       SLUICE_RETURN_IF_ERROR(loader->Next(&batch));
//       if (batch == nullptr) break;   // end of epoch
//       Train(*batch);                 // checkpoint loader->state() with the model
//     }
//   }
//
// Contracts (DESIGN.md): the batches of an epoch are a pure function of (dataset, options, seed,
// epoch, rank, world); every rank gets the same number; their union is the epoch, each record
// (each LoaderOptions::select accepts) once; Start(state) resumes exactly, and at another world
// size with the rest of the epoch exactly once (resume.h); memory is bounded by the options, not
// the dataset. Not thread-safe: one consumer thread calls Start/Next.
//
// An interface: Open returns the implementation (loader_impl.h), whose state stays out of this
// header, so that it includes no thread library and no internal header of the loader.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "../base/status.h"
#include "../loader/batch.h"
#include "../loader/options.h"
#include "../loader/resume.h"
#include "../loader/stats.h"

namespace sluice::loader {

// What a batch's feature rows are, for sizing a model's input and converting frames to time.
struct FeatureInfo {
  bool audio = false;              // false: a text dataset; batches carry no feature rows
  FeatureKind kind = FeatureKind::kFbank;  // what an audio record becomes (kPrecomputed: the
                                   // dataset's stored features)
  int dim = 0;                     // F, values per frame (Batch::dim(): 1 for raw, 0 for text)
  int sample_rate = 0;             // Hz of the dataset's audio (0 for text)
  double frame_shift_seconds = 0;  // audio per frame: the hop in samples / sample_rate (the
                                   // stored features' own hop when precomputed; 0 for text)
  DType dtype = DType::kFloat32;   // Batch::features() element type
  // A conversation dataset with audio turns: no feature rows (audio false), but each batch's
  // audio turns (Batch::audio_features()) computed as kind and dim say.
  bool audio_turns = false;
};

// The largest batch of a plan, from the index alone: what a consumer preallocates for.
struct BatchShape {
  uint64_t rows = 0;           // most rows of one batch (Batch::size())
  uint64_t frames = 0;         // longest T of one batch (Batch::frames(); 0 for text)
  uint64_t padded_frames = 0;  // most rows x T of one batch: its features are this x dim values
  uint64_t tokens = 0;         // widest token row of one batch (Batch::max_tokens()) as the
                               // index counts ids: L + 1 for packed batches; 0 when the records
                               // carry no counts (tokenized online, uncounted)
  uint64_t audio = 0;          // most audio turns of one batch (Batch::num_audio(); conversation
                               // datasets with audio turns, 0 otherwise)
  uint64_t audio_frames = 0;   // longest audio of one batch (Batch::audio_frames())
  uint64_t padded_audio_frames = 0;  // most audio x audio_frames of one batch: its audio
                                     // features are this x FeatureInfo::dim values
};

class Loader {
 public:
  // Opens the dataset (manifest and shard indexes; no payload) and checks the options against
  // it. When its records hold text without ids and options.tokenizer is empty, loads the
  // dataset's tokenizer (manifest.json "tokenizer") to tokenize them online; a given tokenizer
  // wins. InvalidArgument/Unsupported naming the option, or the dataset's own errors.
  static Status Open(const std::string& dir, const LoaderOptions& options,
                     std::unique_ptr<Loader>* out);
  // A weighted mixture of datasets (docs/loader.md, "Weighted mixing"): every epoch holds
  // mix.epoch_records records, each source's share by weight, sampled without replacement and
  // repeated when a source runs out; EpochStats::sources counts them. One source with
  // epoch_records 0 is Open(dir). The sources must agree on kind, sample rate, codec, record
  // fields, tokenizer and, when the loader would use them, precomputed features:
  // InvalidArgument naming both directories. Packing a mixture: Unsupported.
  static Status Open(const MixOptions& mix, const LoaderOptions& options,
                     std::unique_ptr<Loader>* out);
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;
  virtual ~Loader() = default;  // stops the epoch in progress; its batches become invalid

  // Plans epoch state.epoch and starts the background pipeline where `state` stopped. Saved at
  // this world size (state.world == options.world, or 0), at batch state.batches of the plan for
  // the stretches in state.earlier (none: the whole epoch's plan). Saved at another world size:
  // the rest of the epoch, planned without the records the state's ranks consumed, from its
  // first batch; state() then adds that stretch to `earlier` (resume.h, plan.h step 4). Stops
  // any epoch in progress; batches it handed out are invalid. InvalidArgument when the state is
  // past the epoch's end or does not fit its plan, or the batch pool would exceed memory_budget;
  // Unsupported for a packed epoch saved at another world size.
  virtual Status Start(const ResumeState& state) = 0;
  // This world's epoch `epoch` from batch `start_batch`.
  Status Start(uint64_t epoch, uint64_t start_batch) {
    ResumeState state;
    state.epoch = epoch;
    state.batches = start_batch;
    return Start(state);
  }
  Status Start(uint64_t epoch) { return Start(epoch, 0); }

  // The next batch of the epoch into *batch; nullptr after the last one. A non-OK status (a
  // corrupt block under CorruptPolicy::kFail, an I/O error) ends the epoch; it names the shard
  // and the offset. Blocks while the pipeline is behind (that time is EpochStats::wait_seconds).
  virtual Status Next(const Batch** batch) = 0;
  // Next waiting at most `timeout`: when no batch came by then, *ready is false, *batch nullptr
  // and nothing was taken; call again to go on waiting. Otherwise *ready is true and it is
  // Next's result. For a consumer that must react to something else while the pipeline is
  // behind (the Python binding checks for Ctrl-C between waits).
  virtual Status NextFor(const Batch** batch, std::chrono::nanoseconds timeout, bool* ready) = 0;

  // Epoch, batches taken so far, this world size and the epoch's earlier stretches at other
  // world sizes: save it with a checkpoint, pass it to Start to resume (at any world size).
  virtual ResumeState state() const = 0;
  // The started epoch so far.
  virtual EpochStats stats() const = 0;

  // This rank's batches in the started epoch (0 before Start); the same on every rank.
  virtual uint64_t num_batches() const = 0;
  // This rank's batches in any epoch, from its plan alone (nothing is read or started): for a
  // learning-rate schedule before the first epoch. The planner's errors.
  virtual Status CountBatches(uint64_t epoch, uint64_t* batches) const = 0;
  // The largest batch of the started epoch's plan (zeros before Start), whatever start_batch.
  virtual BatchShape max_batch_shape() const = 0;
  virtual const FeatureInfo& feature_info() const = 0;
  // The options as Open resolved them (the dataset's tokenizer filled in).
  virtual const LoaderOptions& options() const = 0;

 protected:
  Loader() = default;
};

}  // namespace sluice::loader

namespace sluice {
using Loader = loader::Loader;
}  // namespace sluice
