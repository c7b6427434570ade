// Loader: the library a training binary links to turn a shard dataset into padded batches
// (docs/loader.md). One Loader per rank:
//
//   std::unique_ptr<sluice::Loader> loader;
//   SLUICE_RETURN_IF_ERROR(sluice::Loader::Open(dir, options, &loader));
//   for (uint64_t epoch = state.epoch; ; ++epoch) {
//     SLUICE_RETURN_IF_ERROR(loader->Start(epoch, epoch == state.epoch ? state.batches : 0));
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
// (each LoaderOptions::select accepts) once; Start(state) resumes exactly; memory is bounded by the options, not the dataset.
// Not thread-safe: one consumer thread calls Start/Next.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include <oneapi/tbb/enumerable_thread_specific.h>
#include <oneapi/tbb/task_arena.h>

#include "base/status.h"
#include "loader/batch.h"
#include "loader/batch_pool.h"
#include "loader/feature_extractor.h"
#include "loader/options.h"
#include "loader/plan.h"
#include "loader/resume.h"
#include "loader/schedule.h"
#include "loader/stats.h"
#include "shards/dataset.h"

namespace sluice::loader {

class EpochPipeline;

class Loader {
 public:
  // Opens the dataset (manifest and shard indexes; no payload) and checks the options against
  // it. When its records hold text without ids and options.tokenizer is empty, loads the
  // dataset's tokenizer (manifest.json "tokenizer") to tokenize them online; a given tokenizer
  // wins. InvalidArgument/Unsupported naming the option, or the dataset's own errors.
  static Status Open(const std::string& dir, const LoaderOptions& options,
                     std::unique_ptr<Loader>* out);
  ~Loader();

  // Plans epoch `epoch` and starts the background pipeline at batch `start_batch` (0, or the
  // batches of a ResumeState). Stops any epoch in progress; batches it handed out are invalid.
  // InvalidArgument when start_batch is past the epoch's end or the batch pool would exceed
  // memory_budget.
  Status Start(uint64_t epoch, uint64_t start_batch = 0);
  Status Start(const ResumeState& state) { return Start(state.epoch, state.batches); }

  // The next batch of the epoch into *batch; nullptr after the last one. A non-OK status (a
  // corrupt block under CorruptPolicy::kFail, an I/O error) ends the epoch; it names the shard
  // and the offset. Blocks while the pipeline is behind (that time is EpochStats::wait_seconds).
  Status Next(const Batch** batch);

  // Epoch and batches taken so far: save it with a checkpoint, pass it to Start to resume.
  ResumeState state() const { return {epoch_, start_batch_ + taken_}; }
  // This rank's batches in the started epoch; the same on every rank.
  uint64_t num_batches() const { return plan_.batches.size(); }
  const EpochPlan& plan() const { return plan_; }
  // The started epoch so far.
  EpochStats stats() const;

  const shards::Dataset& dataset() const { return *dataset_; }
  const IndexColumns& index() const { return *ix_; }
  const FeatureExtractor& extractor() const { return *extractor_; }
  const LoaderOptions& options() const { return options_; }
  int threads() const { return threads_; }
  int tokens_in_flight() const { return tokens_; }

 private:
  Loader() = default;
  void Stop();
  uint32_t OpenBatchCap() const;  // LoaderOptions::open_batches, raised for packed plans

  LoaderOptions options_;
  int threads_ = 1;
  int tokens_ = 4;
  std::unique_ptr<shards::Dataset> dataset_;
  std::unique_ptr<FeatureExtractor> extractor_;
  IndexColumns index_;
  IndexColumns epoch_index_;  // index_ with this epoch's perturbed lengths (speed_perturb)
  const IndexColumns* ix_ = &index_;  // the one the started epoch uses
  std::vector<uint32_t> read_unit_;   // packing: per record, its (block, shuffle chunk) run
  uint32_t num_read_units_ = 0;
  std::unique_ptr<BatchPool> pool_;
  std::unique_ptr<tbb::task_arena> arena_;
  std::unique_ptr<tbb::enumerable_thread_specific<DecodeScratch>> scratch_;

  uint64_t epoch_ = 0;
  uint64_t start_batch_ = 0;
  uint64_t taken_ = 0;  // batches Next() returned since Start
  EpochPlan plan_;
  ReadSchedule schedule_;
  std::unique_ptr<EpochPipeline> pipeline_;
  std::deque<Batch*> held_;  // batches the consumer holds, oldest first
  bool started_ = false;
  bool done_ = false;
  Status error_;  // what ended the epoch, repeated by later Next() calls
  std::chrono::steady_clock::time_point start_time_;
  EpochStats consumer_;  // wall, first batch, wait; the rest comes from the pipeline
};

}  // namespace sluice::loader

namespace sluice {
using Loader = loader::Loader;
}  // namespace sluice
