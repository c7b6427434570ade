// FakeFeedBackend: the FeedBackend's CUDA semantics simulated in plain C++, so the feeder's
// buffer lifecycle is tested on machines without a GPU. Two in-order op queues stand for the copy
// and compute streams; ops run only when the "device" makes progress, which happens in a seeded
// random amount before every host call (or never, until the host synchronises: kLazy). Copies read
// their source when they run, not when they are enqueued, so a host buffer recycled too early or a
// device buffer overwritten too early shows up as wrong data in the test's compute ops.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <random>
#include <vector>

#include "gpu/feed_backend.h"

namespace sluice::gpu::testing {

class FakeFeedBackend : public FeedBackend {
 public:
  enum class Progress {
    kRandom,        // up to max_ops runnable ops of either stream before each host call
    kCopyFirst,     // the same, preferring the copy stream
    kComputeFirst,  // the same, preferring the compute stream
    kLazy,          // nothing runs until the host synchronises
  };
  explicit FakeFeedBackend(Progress progress = Progress::kRandom, uint64_t seed = 1,
                           int max_ops = 4);
  ~FakeFeedBackend() override;

  Status AllocateDevice(size_t bytes, void** out) override;
  Status FreeDevice(void* p) override;
  Status CreateEvent(bool timing, EventId* out) override;
  Status CopyToDevice(void* dst, const void* src, size_t bytes) override;
  Status Record(EventId event, FeedStream stream) override;
  Status StreamWait(FeedStream stream, EventId event) override;
  Status Query(EventId event, bool* done) override;
  Status Synchronize(EventId event) override;
  Status ElapsedSeconds(EventId from, EventId to, double* seconds) override;
  Status SynchronizeAll() override;
  void* compute_stream() const override { return nullptr; }

  // A "kernel" on the compute stream that runs `fn` when the stream reaches it and advances the
  // fake clock by `cost` seconds.
  void EnqueueCompute(std::function<void()> fn, double cost = 1e-3);
  // Enqueued copies that have not run yet and read from [p, p + bytes).
  size_t PendingCopiesFrom(const void* p, size_t bytes) const;
  size_t pending_ops() const { return queues_[0].size() + queues_[1].size(); }
  uint64_t allocations() const { return allocations_; }
  size_t live_allocations() const { return blocks_.size(); }
  uint64_t ops_run() const { return ops_run_; }

 private:
  struct Op {
    enum Kind { kCopy, kRecord, kWait, kKernel } kind;
    void* dst = nullptr;
    const void* src = nullptr;
    size_t bytes = 0;
    EventId event = -1;
    uint64_t generation = 0;
    double cost = 0;
    std::function<void()> fn;
  };
  struct EventState {
    bool timing = true;
    uint64_t recorded = 0;   // Record calls so far
    uint64_t completed = 0;  // the last one that ran
    double time = 0;
  };
  std::deque<Op>& Queue(FeedStream s) { return queues_[s == FeedStream::kCopy ? 0 : 1]; }
  bool Runnable(int q) const;
  void Run(int q);
  bool StepOne(int prefer);   // runs one runnable op; false when none is
  void Advance();             // the random progress before a host call
  Status CheckEvent(EventId e) const;

  Progress progress_;
  std::mt19937_64 rng_;
  int max_ops_;
  std::deque<Op> queues_[2];
  std::vector<EventState> events_;
  std::map<const char*, size_t> blocks_;  // device allocations: base -> bytes
  uint64_t allocations_ = 0;
  uint64_t ops_run_ = 0;
  double clock_ = 0;
};

}  // namespace sluice::gpu::testing
