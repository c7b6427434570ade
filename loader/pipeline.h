// EpochPipeline: one epoch (or the rest of one, after a resume) of one rank, run in the background
// as a oneTBB parallel_pipeline over the ReadSchedule's steps (one token = one block):
//
//   Read     serial_in_order  pread of the block's compressed bytes; opens (takes pool memory
//                             for) the batches this block is the first to fill. Thin: a pread
//                             from the page cache costs microseconds per block.
//   Decode   parallel         checksum + zstd, parse each needed record, samples -> features
//                             written straight into its row of the batch (zero padding included)
//   Collate  serial_in_order  counts rows in, applies the corrupt-block policy, finishes the
//                             batches that are complete, in plan order, into the ready queue
//
// What a batch's rows hold, padded records or packed sequences, is the Collator's (collator.h).
//
// Every byte of a batch is a function of the plan alone, so the thread count and timing never
// change the output. An exception in any stage cancels the pipeline; Next() returns it as a Status
// after the batches finished before it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <oneapi/tbb/enumerable_thread_specific.h>
#include <oneapi/tbb/parallel_pipeline.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>

#include "base/status.h"
#include "loader/batch_pool.h"
#include "loader/collator.h"
#include "loader/feature_extractor.h"
#include "loader/plan.h"
#include "loader/ready_queue.h"
#include "loader/schedule.h"
#include "loader/stats.h"
#include "loader/sources.h"
#include "shards/dataset.h"

namespace sluice::loader {

// What the pipeline shares with its Loader, which outlives it.
struct PipelineContext {
  const Sources* dataset = nullptr;
  const IndexColumns* index = nullptr;
  const FeatureExtractor* extractor = nullptr;
  const LoaderOptions* options = nullptr;
  const Collator* collator = nullptr;  // bound to the pipeline's index and plan
  BatchPool* pool = nullptr;
  tbb::task_arena* arena = nullptr;
  tbb::enumerable_thread_specific<DecodeScratch>* scratch = nullptr;
};

class EpochPipeline {
 public:
  // `plan` and `schedule` must outlive the pipeline. `tokens` bounds the steps in flight and
  // must be the lag the schedule was made with.
  EpochPipeline(const PipelineContext& ctx, const EpochPlan* plan, const ReadSchedule* schedule,
                int tokens);
  ~EpochPipeline();  // cancels, joins, and returns every batch it holds to the pool

  void Start();
  // The next finished batch, in plan order; nullptr after the last. Non-OK once the pipeline
  // failed (after the batches finished before the failure).
  Status Pop(BatchBuffer** out);
  // Pop waiting at most `timeout`: *ready false (nothing taken) when it passed first.
  Status PopFor(std::chrono::nanoseconds timeout, BatchBuffer** out, bool* ready);
  // Counters so far (the consumer's fields are the Loader's).
  void Snapshot(EpochStats* stats) const;

 private:
  struct Token;
  Token* ReadStage(tbb::flow_control& fc);
  void DecodeStage(Token* t);
  void CollateStage(Token* t);
  void AnnounceReads(uint32_t s);
  void OpenBatch(uint32_t j);
  void DecodeItem(const ReadItem& item, DecodeScratch* s, Token* t);
  void FinishBatch(BatchBuffer* b);
  // kSkip: refills the rows whose record was lost from the first intact row.
  void RefillLostRows(BatchBuffer* b) const;
  void Run();
  void Cancel();

  PipelineContext ctx_;
  const EpochPlan* plan_;
  const ReadSchedule* schedule_;
  const int tokens_;
  std::vector<std::unique_ptr<Token>> ring_;  // token for step s is ring_[s % tokens_]
  std::vector<BatchBuffer*> slots_;                 // per plan batch: its buffer while being filled
  std::vector<uint8_t> opened_;               // read stage only
  std::vector<uint8_t> collated_;             // collate stage only: a row of the batch came in
  uint32_t next_step_ = 0;                    // read stage only
  uint32_t next_hint_ = 0;                    // read stage only: first step not yet announced
  uint64_t next_emit_ = 0;                    // collate stage only
  std::vector<BatchBuffer*> finished_;              // collate stage only: batches it queues at once
  ReadyQueue queue_;
  tbb::task_group_context tbb_ctx_;
  std::thread thread_;
  std::atomic<bool> cancelled_{false};
  mutable std::mutex status_mu_;
  Status status_;

  // Counters (relaxed atomics: read by Snapshot while running).
  std::atomic<int64_t> read_ns_{0}, decode_ns_{0}, collate_ns_{0};
  std::atomic<uint64_t> blocks_read_{0}, bytes_read_{0}, allocations_{0}, segment_blocks_read_{0};
  std::atomic<uint64_t> batches_{0}, utterances_{0}, skipped_{0}, repeated_{0}, frames_{0},
      padded_frames_{0}, duration_{0}, token_ids_{0}, padding_tokens_{0}, input_columns_{0};
  std::atomic<int64_t> in_flight_{0}, open_{0};
  std::atomic<uint64_t> max_in_flight_{0}, max_open_{0};
};

}  // namespace sluice::loader
