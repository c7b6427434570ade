// TracingBackend: a FeedBackend decorator that timestamps what the feeder does, for the ordering
// tests. It works over the fake (logical clock) and over CUDA (GPU timestamps), so the same
// checks run on this machine and on a GPU:
//   copy_begin[m]: recorded on the copy stream just before batch m's first copy is enqueued, so
//                  it completes when that copy may start (after any wait the feeder put there);
//   copy_end[m]:   recorded on the copy stream right after the feeder's first event for batch m.
// Marker() lets the test timestamp its own compute-stream work.
#pragma once

#include <memory>
#include <vector>

#include "gpu/feed_backend.h"

namespace sluice::gpu::testing {

class TracingBackend : public FeedBackend {
 public:
  explicit TracingBackend(FeedBackend* inner) : inner_(inner) {}

  Status AllocateDevice(size_t bytes, void** out) override {
    return inner_->AllocateDevice(bytes, out);
  }
  Status FreeDevice(void* p) override { return inner_->FreeDevice(p); }
  Status CreateEvent(bool timing, EventId* out) override {
    return inner_->CreateEvent(timing, out);
  }
  Status CopyToDevice(void* dst, const void* src, size_t bytes) override {
    if (!in_batch_) {
      in_batch_ = true;
      EventId e;
      SLUICE_RETURN_IF_ERROR(Marker(FeedStream::kCopy, &e));
      copy_begin_.push_back(e);
    }
    return inner_->CopyToDevice(dst, src, bytes);
  }
  Status Record(EventId event, FeedStream stream) override {
    SLUICE_RETURN_IF_ERROR(inner_->Record(event, stream));
    if (stream == FeedStream::kCopy && in_batch_) {
      in_batch_ = false;  // the feeder records copy_done first: this batch's copies are enqueued
      EventId e;
      SLUICE_RETURN_IF_ERROR(Marker(FeedStream::kCopy, &e));
      copy_end_.push_back(e);
    }
    return Status::OK();
  }
  Status StreamWait(FeedStream stream, EventId event) override {
    return inner_->StreamWait(stream, event);
  }
  Status Query(EventId event, bool* done) override { return inner_->Query(event, done); }
  Status Synchronize(EventId event) override { return inner_->Synchronize(event); }
  Status ElapsedSeconds(EventId from, EventId to, double* s) override {
    return inner_->ElapsedSeconds(from, to, s);
  }
  Status SynchronizeAll() override { return inner_->SynchronizeAll(); }
  void* compute_stream() const override { return inner_->compute_stream(); }

  // A fresh timing event recorded on `stream` now.
  Status Marker(FeedStream stream, EventId* out) {
    SLUICE_RETURN_IF_ERROR(inner_->CreateEvent(true, out));
    if (base_ < 0) {
      // The origin of all timestamps: recorded before anything else.
      base_ = *out;
      SLUICE_RETURN_IF_ERROR(inner_->Record(base_, stream));
      SLUICE_RETURN_IF_ERROR(inner_->CreateEvent(true, out));
    }
    return inner_->Record(*out, stream);
  }
  // Seconds since the first marker; all events completed (after SynchronizeAll).
  Status Time(EventId e, double* t) { return inner_->ElapsedSeconds(base_, e, t); }

  const std::vector<EventId>& copy_begin() const { return copy_begin_; }
  const std::vector<EventId>& copy_end() const { return copy_end_; }

 private:
  FeedBackend* inner_;
  bool in_batch_ = false;
  EventId base_ = -1;
  std::vector<EventId> copy_begin_, copy_end_;
};

// Owns the inner backend too, so a Feeder can own the decorator.
class OwningTracingBackend : public TracingBackend {
 public:
  explicit OwningTracingBackend(std::unique_ptr<FeedBackend> inner)
      : TracingBackend(inner.get()), owned_(std::move(inner)) {}
  FeedBackend* inner() const { return owned_.get(); }

 private:
  std::unique_ptr<FeedBackend> owned_;
};

}  // namespace sluice::gpu::testing
