// LoaderImpl: the Loader's state (loader.h is the interface). Internal: the loader's own code and
// its tests include it; a training binary uses loader.h alone.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include <oneapi/tbb/enumerable_thread_specific.h>
#include <oneapi/tbb/task_arena.h>

#include "loader/batch_pool.h"
#include "loader/collator.h"
#include "loader/conversation_plan.h"
#include "loader/feature_extractor.h"
#include "loader/loader.h"
#include "loader/plan.h"
#include "loader/schedule.h"
#include "loader/sources.h"
#include "shards/dataset.h"

namespace sluice::loader {

class EpochPipeline;

class LoaderImpl final : public Loader {
 public:
  static Status Open(const MixOptions& mix, const LoaderOptions& options,
                     std::unique_ptr<LoaderImpl>* out);
  ~LoaderImpl() override;

  using Loader::Start;
  Status Start(const ResumeState& state) override;
  Status Next(const Batch** batch) override;
  Status NextFor(const Batch** batch, std::chrono::nanoseconds timeout, bool* ready) override;
  ResumeState state() const override {
    return {epoch_, start_batch_ + taken_, options_.world, earlier_};
  }
  EpochStats stats() const override;
  uint64_t num_batches() const override { return plan_.batches.size(); }
  Status CountBatches(uint64_t epoch, uint64_t* batches) const override;
  BatchShape max_batch_shape() const override { return shape_; }
  const FeatureInfo& feature_info() const override { return info_; }
  const LoaderOptions& options() const override { return options_; }

  // For tests: the started epoch's plan and index (the whole dataset's before Start).
  const EpochPlan& plan() const { return plan_; }
  const IndexColumns& index() const { return *ix_; }
  const Sources& dataset() const { return *dataset_; }

 private:
  LoaderImpl() = default;
  void Stop();
  // Next (timeout nullptr) or NextFor.
  Status Take(const Batch** batch, const std::chrono::nanoseconds* timeout, bool* ready);
  // The epoch's index (lengths of its speed-perturbed records, in *scratch) and plan.
  Status PlanEpoch(uint64_t epoch, const std::vector<WorldSegment>& earlier, IndexColumns* scratch,
                   const IndexColumns** index, EpochPlan* plan) const;

  // Sizes the batch pool for the started plan's batches from start_batch (and shape_ for the
  // whole plan), checks memory_budget, and reserves every buffer. *pool_bytes: what the pool may
  // hold, outliers over max_padded_tokens included; *allocations: the allocator calls it made.
  Status ReservePool(uint64_t epoch, uint64_t start_batch, uint64_t* pool_bytes,
                     uint64_t* allocations);

  LoaderOptions options_;
  FeatureInfo info_;
  int threads_ = 1;
  int tokens_ = 4;
  std::unique_ptr<Sources> dataset_;  // one dataset, or a mixture's sources
  std::unique_ptr<FeatureExtractor> extractor_;
  uint64_t augment_bytes_ = 0;  // the waveform augmentation clips in memory (augment_sources.h)
  std::unique_ptr<Collator> collator_;  // padded or packed batches, chosen at Open
  std::unique_ptr<ConversationSpec> conversation_;  // conversation datasets only
  std::unique_ptr<ConversationAudio> conversation_audio_;  // theirs with audio turns
  // Open's part for conversation datasets (and the refusal of their options elsewhere): the
  // spec, and per record the filter's columns (their llm_tokens the rows' costs); other
  // datasets leave *columns empty.
  Status OpenConversations(const std::string& dir, ConversationColumns* columns);
  // Open's steps after the selection: the augmentation chain's clips; feature_info().
  Status LoadAugmentClips();
  void DescribeFeatures();
  IndexColumns index_;
  std::vector<FilterCount> filtered_;  // LoaderOptions::filter's counts by reason (record_filter.h)
  IndexColumns epoch_index_;  // index_ with this epoch's perturbed lengths (speed_perturb)
  const IndexColumns* ix_ = &index_;  // the one the started epoch uses
  std::unique_ptr<BatchPool> pool_;
  std::unique_ptr<tbb::task_arena> arena_;
  std::unique_ptr<tbb::enumerable_thread_specific<DecodeScratch>> scratch_;

  uint64_t epoch_ = 0;
  uint64_t start_batch_ = 0;
  std::vector<WorldSegment> earlier_;  // the started epoch's stretches at other world sizes
  uint64_t taken_ = 0;  // batches Next() returned since Start
  EpochPlan plan_;
  BatchShape shape_;
  ReadSchedule schedule_;
  std::unique_ptr<EpochPipeline> pipeline_;
  std::deque<BatchBuffer*> held_;  // batches the consumer holds, oldest first
  bool started_ = false;
  bool done_ = false;
  Status error_;  // what ended the epoch, repeated by later Next() calls
  std::chrono::steady_clock::time_point start_time_;
  EpochStats consumer_;  // wall, first batch, wait; the rest comes from the pipeline
  // Every source's storage counters at Start and, once the epoch ended, at its end.
  shards::StorageCounters StorageNow() const;
  shards::StorageCounters storage_start_, storage_end_;
};

// The implementation behind a Loader that Loader::Open made (every Loader is one): for tests.
inline const LoaderImpl& ImplOf(const Loader& l) { return static_cast<const LoaderImpl&>(l); }

}  // namespace sluice::loader
