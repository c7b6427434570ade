// Feeder: hands the trainer each batch already on the device, copied while the previous step
// computes (docs/gpu.md has the lifecycle diagram). One Feeder per rank, driven by the training
// thread:
//
//   std::unique_ptr<Feeder> feeder;
//   SLUICE_RETURN_IF_ERROR(Feeder::Create(std::move(backend), &source, options, &feeder));
//   const DeviceBatch* b;
//   while (true) {
//     SLUICE_RETURN_IF_ERROR(feeder->Next(&b));
//     if (b == nullptr) break;                     // end of epoch; everything synchronised
//     Step(*b, feeder->compute_stream());         // kernels on the compute stream
//   }
//
// Rules it keeps (each tested with the fake backend, tests/gpu/feeder_test.cc):
//  - every copy runs on the copy stream; its event is recorded right after it;
//  - the compute stream waits (device-side, cudaStreamWaitEvent) for a batch's copy before the
//    consumer's kernels for it, so the host never blocks on a copy it does not have to;
//  - a host batch goes back to the source (the loader's pool) only after its copy completed:
//    before the source call that would recycle it, the feeder synchronises on that copy;
//  - a device buffer is written again only after the compute stream finished the step that read
//    it: calling Next() again says "my kernels for the previous batch are enqueued", the feeder
//    records an event on the compute stream there and the next copy into that buffer waits on it;
//  - every array of a batch (batch_source.h: features, ids, packed positions, cu_seqlens and loss
//    masks, conversation audio) is copied under these rules, into one device buffer per slot;
//  - device buffers are allocated in Create for FeederOptions::capacity; a batch larger than that
//    in any array grows one buffer (counted in FeedStats::grow_allocations), so steady state
//    allocates nothing.
// Per step it measures on the GPU the time compute waited for data (FeedStats).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "base/status.h"
#include "gpu/batch_source.h"
#include "gpu/feed_backend.h"

namespace sluice::gpu {

// A batch in device memory: every array of its HostBatch (batch_source.h), same layout, null
// where the host batch had none. Valid until the next Next(). Keys and transcripts stay on the
// host (the loader's Batch), which the feeder may already have returned to the pool: read them
// from the loader with consumer_batches large enough if needed.
using DeviceBatch = BatchArrays<true>;

// Room for one batch; loader_source.h computes it from a loader's epoch plan.
struct FeedCapacity {
  size_t feature_bytes = 0;
  size_t rows = 0;
  size_t token_ids = 0;   // rows * max_tokens
  size_t packed_columns = 0;       // rows * seq_len of packed batches (positions, doc ids,
                                   // cu_seqlens; row_cu_seqlens hold rows more)
  size_t loss_mask_bytes = 0;      // packed_columns, or token_ids of padded conversation rows
  size_t audio = 0;                // audio turns (audio lengths and spans)
  size_t audio_feature_bytes = 0;  // num_audio * audio_frames * audio_dim * dtype size
};

struct FeederOptions {
  FeedCapacity capacity;     // device buffers are sized for this up front
  int device_buffers = 3;    // >= 2: one read by the current step, the others filled ahead;
                             // 3 lets a copy run a whole step ahead even when steps vary
  size_t wait_history = 4096;  // per-step waits kept (a ring, allocated once)
};

struct FeedStats {
  uint64_t steps = 0;             // batches handed out
  uint64_t timed_steps = 0;       // steps with a GPU-measured wait (all but the first of an epoch)
  double data_wait_seconds = 0;   // GPU time the compute stream sat between the end of one step
                                  // and the start of the next because its batch was not there
  double max_data_wait_seconds = 0;
  double host_wait_seconds = 0;   // host time in Next() blocked on the source or on a copy
  double first_batch_seconds = 0; // host time of the epoch's first Next() (pipeline start-up)
  uint64_t bytes_copied = 0;
  uint64_t copies = 0;
  uint64_t device_allocations = 0;  // all of them, those of Create included
  uint64_t setup_allocations = 0;   // those of Create
  uint64_t grow_allocations = 0;    // batches bigger than the capacity (not steady state)
  // The last min(timed_steps, wait_history) per-step waits, oldest first.
  std::vector<double> recent_waits;
};

class Feeder {
 public:
  // InvalidArgument for device_buffers < 2 or a source with holds() < 1; the backend's errors.
  static Status Create(std::unique_ptr<FeedBackend> backend, BatchSource* source,
                       const FeederOptions& options, std::unique_ptr<Feeder>* out);
  ~Feeder();
  Feeder(const Feeder&) = delete;
  Feeder& operator=(const Feeder&) = delete;

  // The next batch on the device, or nullptr at the end of the source's epoch (after which
  // everything is synchronised and the source may be restarted). Before returning a batch, the
  // compute stream has been made to wait for its copy.
  Status Next(const DeviceBatch** out);

  // Synchronises both streams and settles the statistics. Call it before restarting the source
  // mid-epoch (Loader::Start): copies from its batches may still be in flight.
  Status Finish();
  // After Finish (or the end of an epoch) and a restart of the source: start counting again.
  Status Rewind();

  FeedStats stats() const;
  void* compute_stream() const { return backend_->compute_stream(); }
  FeedBackend* backend() const { return backend_.get(); }

 private:
  struct Slot;
  Feeder() = default;
  Status Fetch();                   // one source batch into the next slot, copy enqueued
  Status Fit(Slot* slot, const HostBatch& hb);
  Status ResolveTiming(uint64_t step);
  Status Settle();

  std::unique_ptr<FeedBackend> backend_;
  BatchSource* source_ = nullptr;
  FeederOptions options_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::vector<EventId> host_released_;  // per host batch mod holds(): its copies done
  int holds_ = 1;

  uint64_t fetched_ = 0;   // source batches taken this epoch
  uint64_t handed_ = 0;    // batches returned by Next this epoch
  uint64_t resolved_ = 1;  // steps whose wait is settled (step 0 has none)
  bool source_end_ = false;
  bool finished_ = false;
  FeedStats stats_;
  size_t wait_next_ = 0;   // ring position in stats_.recent_waits
};

}  // namespace sluice::gpu
