// FeedBackend: the few stream and event operations the feeder is built from, behind an interface
// so the buffer lifecycle is tested on machines without a GPU (tests/gpu/fake_feed_backend.h runs
// the same calls against simulated streams) and runs for real over CUDA (cuda_feed_backend.h).
//
// Semantics are CUDA's: two in-order streams; an event's completion is that of the last Record
// on it; StreamWait makes a stream wait, device-side, for the event's last Record at the time of
// the call (a no-op when it was never recorded); Query and Synchronize are host-side.
#pragma once

#include <cstddef>

#include "base/status.h"

namespace sluice::gpu {

enum class FeedStream { kCopy, kCompute };
using EventId = int;

class FeedBackend {
 public:
  virtual ~FeedBackend() = default;

  virtual Status AllocateDevice(size_t bytes, void** out) = 0;
  virtual Status FreeDevice(void* p) = 0;
  // Events live as long as the backend. `timing`: ElapsedSeconds works on it. The feeder makes
  // every event it synchronises on blocking (it sleeps rather than spins).
  virtual Status CreateEvent(bool timing, EventId* out) = 0;

  // Host-to-device copy enqueued on the copy stream.
  virtual Status CopyToDevice(void* dst, const void* src, size_t bytes) = 0;
  virtual Status Record(EventId event, FeedStream stream) = 0;
  virtual Status StreamWait(FeedStream stream, EventId event) = 0;
  // *done: the event's last Record has completed (or it was never recorded).
  virtual Status Query(EventId event, bool* done) = 0;
  virtual Status Synchronize(EventId event) = 0;
  // Seconds from `from` to `to`, both completed timing events.
  virtual Status ElapsedSeconds(EventId from, EventId to, double* seconds) = 0;
  // Waits for everything enqueued on both streams.
  virtual Status SynchronizeAll() = 0;

  // The compute stream as an opaque cudaStream_t (nullptr for fakes): the trainer enqueues its
  // kernels there.
  virtual void* compute_stream() const = 0;
};

}  // namespace sluice::gpu
