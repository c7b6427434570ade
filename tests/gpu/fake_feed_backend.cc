#include "fake_feed_backend.h"

#include <cstring>
#include <string>

namespace sluice::gpu::testing {

FakeFeedBackend::FakeFeedBackend(Progress progress, uint64_t seed, int max_ops)
    : progress_(progress), rng_(seed), max_ops_(max_ops) {}

FakeFeedBackend::~FakeFeedBackend() {
  for (auto& [p, n] : blocks_) delete[] p;
}

Status FakeFeedBackend::AllocateDevice(size_t bytes, void** out) {
  char* p = new char[bytes];
  std::memset(p, 0xCD, bytes);
  blocks_[p] = bytes;
  ++allocations_;
  *out = p;
  return Status::OK();
}

Status FakeFeedBackend::FreeDevice(void* p) {
  auto it = blocks_.find(static_cast<const char*>(p));
  if (it == blocks_.end()) return Status::InvalidArgument("fake: FreeDevice of unknown pointer");
  // Freeing memory an enqueued op still touches is a use-after-free on a real device.
  for (const auto& q : queues_)
    for (const Op& op : q)
      if (op.kind == Op::kCopy && op.dst >= p &&
          static_cast<char*>(op.dst) < it->first + it->second)
        return Status::InvalidArgument("fake: FreeDevice while a copy into it is pending");
  delete[] it->first;
  blocks_.erase(it);
  return Status::OK();
}

Status FakeFeedBackend::CreateEvent(bool timing, EventId* out) {
  events_.push_back(EventState{timing});
  *out = static_cast<EventId>(events_.size() - 1);
  return Status::OK();
}

Status FakeFeedBackend::CheckEvent(EventId e) const {
  if (e < 0 || static_cast<size_t>(e) >= events_.size())
    return Status::InvalidArgument("fake: unknown event " + std::to_string(e));
  return Status::OK();
}

Status FakeFeedBackend::CopyToDevice(void* dst, const void* src, size_t bytes) {
  Advance();
  // The destination must lie inside one device allocation.
  auto it = blocks_.upper_bound(static_cast<const char*>(dst));
  if (it == blocks_.begin()) return Status::InvalidArgument("fake: copy to non-device memory");
  --it;
  if (static_cast<const char*>(dst) + bytes > it->first + it->second)
    return Status::InvalidArgument("fake: copy past the end of a device allocation");
  Op op{Op::kCopy};
  op.dst = dst;
  op.src = src;
  op.bytes = bytes;
  Queue(FeedStream::kCopy).push_back(op);
  return Status::OK();
}

Status FakeFeedBackend::Record(EventId e, FeedStream s) {
  SLUICE_RETURN_IF_ERROR(CheckEvent(e));
  Advance();
  Op op{Op::kRecord};
  op.event = e;
  op.generation = ++events_[e].recorded;
  Queue(s).push_back(op);
  return Status::OK();
}

Status FakeFeedBackend::StreamWait(FeedStream s, EventId e) {
  SLUICE_RETURN_IF_ERROR(CheckEvent(e));
  Advance();
  Op op{Op::kWait};
  op.event = e;
  op.generation = events_[e].recorded;  // the last Record at the time of the call, as CUDA
  Queue(s).push_back(op);
  return Status::OK();
}

Status FakeFeedBackend::Query(EventId e, bool* done) {
  SLUICE_RETURN_IF_ERROR(CheckEvent(e));
  Advance();
  *done = events_[e].completed == events_[e].recorded;
  return Status::OK();
}

Status FakeFeedBackend::Synchronize(EventId e) {
  SLUICE_RETURN_IF_ERROR(CheckEvent(e));
  while (events_[e].completed != events_[e].recorded) {
    if (!StepOne(-1))
      return Status::InvalidArgument("fake: deadlock: event " + std::to_string(e) +
                                     " can never complete (the streams wait on each other)");
  }
  return Status::OK();
}

Status FakeFeedBackend::ElapsedSeconds(EventId from, EventId to, double* seconds) {
  SLUICE_RETURN_IF_ERROR(CheckEvent(from));
  SLUICE_RETURN_IF_ERROR(CheckEvent(to));
  const EventState& a = events_[from];
  const EventState& b = events_[to];
  if (!a.timing || !b.timing) return Status::InvalidArgument("fake: event without timing");
  if (a.recorded == 0 || b.recorded == 0 || a.completed != a.recorded || b.completed != b.recorded)
    return Status::InvalidArgument("fake: ElapsedSeconds on an event not completed");
  *seconds = b.time - a.time;
  return Status::OK();
}

Status FakeFeedBackend::SynchronizeAll() {
  while (!queues_[0].empty() || !queues_[1].empty()) {
    if (!StepOne(-1)) return Status::InvalidArgument("fake: deadlock in SynchronizeAll");
  }
  return Status::OK();
}

void FakeFeedBackend::EnqueueCompute(std::function<void()> fn, double cost) {
  Advance();
  Op op{Op::kKernel};
  op.fn = std::move(fn);
  op.cost = cost;
  Queue(FeedStream::kCompute).push_back(std::move(op));
}

size_t FakeFeedBackend::PendingCopiesFrom(const void* p, size_t bytes) const {
  const uintptr_t lo = reinterpret_cast<uintptr_t>(p);
  size_t n = 0;
  for (const Op& op : queues_[0]) {
    if (op.kind != Op::kCopy) continue;
    const uintptr_t s = reinterpret_cast<uintptr_t>(op.src);
    if (s < lo + bytes && lo < s + op.bytes) ++n;
  }
  return n;
}

bool FakeFeedBackend::Runnable(int q) const {
  if (queues_[q].empty()) return false;
  const Op& op = queues_[q].front();
  return op.kind != Op::kWait || events_[op.event].completed >= op.generation;
}

void FakeFeedBackend::Run(int q) {
  Op op = std::move(queues_[q].front());
  queues_[q].pop_front();
  ++ops_run_;
  switch (op.kind) {
    case Op::kCopy:
      std::memcpy(op.dst, op.src, op.bytes);
      clock_ += 1e-6;
      break;
    case Op::kRecord:
      events_[op.event].completed = op.generation;
      events_[op.event].time = clock_;
      break;
    case Op::kWait:
      break;
    case Op::kKernel:
      op.fn();
      clock_ += op.cost;
      break;
  }
}

bool FakeFeedBackend::StepOne(int prefer) {
  const bool r0 = Runnable(0), r1 = Runnable(1);
  if (!r0 && !r1) return false;
  int q;
  if (r0 && r1) {
    q = prefer >= 0 ? prefer : static_cast<int>(rng_() & 1);
  } else {
    q = r0 ? 0 : 1;
  }
  Run(q);
  return true;
}

void FakeFeedBackend::Advance() {
  if (progress_ == Progress::kLazy) return;
  const int prefer = progress_ == Progress::kCopyFirst      ? 0
                     : progress_ == Progress::kComputeFirst ? 1
                                                            : -1;
  const int n = static_cast<int>(rng_() % static_cast<uint64_t>(max_ops_ + 1));
  for (int i = 0; i < n; ++i)
    if (!StepOne(prefer)) break;
}

}  // namespace sluice::gpu::testing
