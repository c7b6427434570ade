#include "gpu/feeder.h"

#include <algorithm>
#include <chrono>
#include <string>

namespace sluice::gpu {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Each array of a slot starts on a 256-byte boundary, like the host batch arrays
// (loader::kBatchAlignment), so kernels may use vector loads on any of them.
constexpr size_t kAlign = 256;
size_t AlignUp(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

size_t SlotBytes(const FeedCapacity& c) {
  return std::max<size_t>(kAlign, AlignUp(c.feature_bytes) + 2 * AlignUp(c.rows * sizeof(int32_t)) +
                                      AlignUp(c.token_ids * sizeof(int32_t)));
}

}  // namespace

// One device buffer and the events that order its reuse.
struct Feeder::Slot {
  void* memory = nullptr;
  FeedCapacity capacity;
  EventId copy_done = -1;      // copy stream: this slot's latest batch is on the device
  EventId compute_start = -1;  // compute stream: its step may start (timing)
  EventId compute_done = -1;   // compute stream: the step that read it is over (timing)
  bool read = false;           // compute_done was recorded at least once
  DeviceBatch view;

  char* base() const { return static_cast<char*>(memory); }
  void Layout() {
    const size_t f = AlignUp(capacity.feature_bytes);
    const size_t r = AlignUp(capacity.rows * sizeof(int32_t));
    view.features = base();
    view.lengths = reinterpret_cast<int32_t*>(base() + f);
    view.token_lengths = reinterpret_cast<int32_t*>(base() + f + r);
    view.tokens = reinterpret_cast<int32_t*>(base() + f + 2 * r);
  }
};

Status Feeder::Create(std::unique_ptr<FeedBackend> backend, BatchSource* source,
                      const FeederOptions& options, std::unique_ptr<Feeder>* out) {
  if (backend == nullptr || source == nullptr)
    return Status::InvalidArgument("Feeder::Create: backend and source are required");
  if (options.device_buffers < 2)
    return Status::InvalidArgument("Feeder: device_buffers is " +
                                   std::to_string(options.device_buffers) +
                                   ", needs at least 2 (one computing, one being filled)");
  if (source->holds() < 1)
    return Status::InvalidArgument("Feeder: the source holds " + std::to_string(source->holds()) +
                                   " batches, needs at least 1");
  std::unique_ptr<Feeder> f(new Feeder());
  f->backend_ = std::move(backend);
  f->source_ = source;
  f->options_ = options;
  f->holds_ = source->holds();
  FeedBackend& be = *f->backend_;
  for (int i = 0; i < options.device_buffers; ++i) {
    auto slot = std::make_unique<Slot>();
    slot->capacity = options.capacity;
    SLUICE_RETURN_IF_ERROR(be.AllocateDevice(SlotBytes(slot->capacity), &slot->memory));
    ++f->stats_.device_allocations;
    slot->Layout();
    SLUICE_RETURN_IF_ERROR(be.CreateEvent(false, &slot->copy_done));
    SLUICE_RETURN_IF_ERROR(be.CreateEvent(true, &slot->compute_start));
    SLUICE_RETURN_IF_ERROR(be.CreateEvent(true, &slot->compute_done));
    f->slots_.push_back(std::move(slot));
  }
  f->stats_.setup_allocations = f->stats_.device_allocations;
  f->host_released_.resize(f->holds_);
  for (EventId& e : f->host_released_) SLUICE_RETURN_IF_ERROR(be.CreateEvent(false, &e));
  f->stats_.recent_waits.assign(std::max<size_t>(options.wait_history, 1), 0.0);
  *out = std::move(f);
  return Status::OK();
}

Feeder::~Feeder() {
  if (backend_ == nullptr) return;
  // Nothing may still copy into or out of memory we are about to free.
  (void)backend_->SynchronizeAll();
  for (auto& s : slots_) (void)backend_->FreeDevice(s->memory);
}

Status Feeder::Fit(Slot* slot, const HostBatch& hb) {
  const size_t token_ids = hb.tokens != nullptr ? hb.rows * static_cast<size_t>(hb.max_tokens) : 0;
  FeedCapacity& c = slot->capacity;
  if (hb.features_bytes <= c.feature_bytes && hb.rows <= c.rows && token_ids <= c.token_ids)
    return Status::OK();
  // Bigger than the plan said: grow this buffer once. Only after the step that read it is over.
  if (slot->read) SLUICE_RETURN_IF_ERROR(backend_->Synchronize(slot->compute_done));
  SLUICE_RETURN_IF_ERROR(backend_->FreeDevice(slot->memory));
  slot->memory = nullptr;
  c.feature_bytes = std::max(c.feature_bytes, hb.features_bytes);
  c.rows = std::max(c.rows, hb.rows);
  c.token_ids = std::max(c.token_ids, token_ids);
  SLUICE_RETURN_IF_ERROR(backend_->AllocateDevice(SlotBytes(c), &slot->memory));
  ++stats_.device_allocations;
  ++stats_.grow_allocations;
  slot->Layout();
  return Status::OK();
}

Status Feeder::Fetch() {
  const uint64_t m = fetched_;
  const EventId released = host_released_[m % holds_];
  const auto t0 = Clock::now();
  // The source call below recycles the batch it returned holds() calls ago: that batch's copies
  // must be over first. Usually long done, so this rarely blocks.
  if (m >= static_cast<uint64_t>(holds_)) SLUICE_RETURN_IF_ERROR(backend_->Synchronize(released));
  HostBatch hb;
  bool end = false;
  SLUICE_RETURN_IF_ERROR(source_->Next(&hb, &end));
  stats_.host_wait_seconds += Since(t0);
  if (end) {
    source_end_ = true;
    return Status::OK();
  }
  Slot& slot = *slots_[m % slots_.size()];
  SLUICE_RETURN_IF_ERROR(Fit(&slot, hb));
  // Device-side: the copy into this buffer starts only once the step that read it is over. The
  // host does not wait here.
  if (slot.read) SLUICE_RETURN_IF_ERROR(backend_->StreamWait(FeedStream::kCopy, slot.compute_done));
  DeviceBatch& v = slot.view;
  v.epoch = hb.epoch;
  v.index = hb.index;
  v.rows = hb.rows;
  v.frames = hb.frames;
  v.dim = hb.dim;
  v.dtype = hb.dtype;
  v.max_tokens = hb.tokens != nullptr ? hb.max_tokens : 0;
  v.features_bytes = hb.features_bytes;
  slot.Layout();
  auto copy = [&](void* dst, const void* src, size_t bytes) -> Status {
    if (src == nullptr || bytes == 0) return Status::OK();
    SLUICE_RETURN_IF_ERROR(backend_->CopyToDevice(dst, src, bytes));
    stats_.bytes_copied += bytes;
    ++stats_.copies;
    return Status::OK();
  };
  SLUICE_RETURN_IF_ERROR(copy(v.features, hb.features, hb.features_bytes));
  SLUICE_RETURN_IF_ERROR(copy(v.lengths, hb.lengths, hb.rows * sizeof(int32_t)));
  SLUICE_RETURN_IF_ERROR(copy(v.token_lengths, hb.token_lengths, hb.rows * sizeof(int32_t)));
  SLUICE_RETURN_IF_ERROR(
      copy(v.tokens, hb.tokens, hb.rows * static_cast<size_t>(v.max_tokens) * sizeof(int32_t)));
  if (hb.tokens == nullptr) v.tokens = nullptr;
  if (hb.token_lengths == nullptr) v.token_lengths = nullptr;
  if (hb.lengths == nullptr) v.lengths = nullptr;
  SLUICE_RETURN_IF_ERROR(backend_->Record(slot.copy_done, FeedStream::kCopy));
  SLUICE_RETURN_IF_ERROR(backend_->Record(released, FeedStream::kCopy));
  ++fetched_;
  return Status::OK();
}

// Step j's wait: from the end of step j-1 (compute_done of its slot) to the moment step j could
// start (compute_start, recorded after the stream waited for j's copy). GPU timestamps, so it
// counts only time the compute stream really sat idle for data: host stalls while the GPU still
// had queued work cost nothing and are not counted.
Status Feeder::ResolveTiming(uint64_t j) {
  const size_t n = slots_.size();
  const Slot& prev = *slots_[(j - 1) % n];
  const Slot& cur = *slots_[j % n];
  SLUICE_RETURN_IF_ERROR(backend_->Synchronize(cur.compute_start));
  double s = 0;
  SLUICE_RETURN_IF_ERROR(backend_->ElapsedSeconds(prev.compute_done, cur.compute_start, &s));
  s = std::max(s, 0.0);
  stats_.data_wait_seconds += s;
  stats_.max_data_wait_seconds = std::max(stats_.max_data_wait_seconds, s);
  ++stats_.timed_steps;
  stats_.recent_waits[wait_next_] = s;
  wait_next_ = (wait_next_ + 1) % stats_.recent_waits.size();
  return Status::OK();
}

Status Feeder::Next(const DeviceBatch** out) {
  *out = nullptr;
  if (finished_) return Status::OK();
  const auto t0 = Clock::now();
  const uint64_t k = handed_;
  const size_t n = slots_.size();
  // Step k-n's events are re-recorded below (its compute_start and its predecessor's
  // compute_done share slots with steps k and k-1): settle its wait first.
  if (k >= n + 1 && resolved_ <= k - n) {
    SLUICE_RETURN_IF_ERROR(ResolveTiming(k - n));
    resolved_ = k - n + 1;
  }
  if (k > 0) {
    // The caller's kernels for batch k-1 are enqueued: its buffer is free once they finish.
    Slot& prev = *slots_[(k - 1) % n];
    SLUICE_RETURN_IF_ERROR(backend_->Record(prev.compute_done, FeedStream::kCompute));
    prev.read = true;
  }
  // Keep n batches fetched ahead of the one computing: batch k and the n-1 after it. Fetch before
  // handing k out, so a source stall lands before compute_start and is counted as data wait.
  while (!source_end_ && fetched_ < k + n) SLUICE_RETURN_IF_ERROR(Fetch());
  if (fetched_ <= k) return Settle();
  Slot& slot = *slots_[k % n];
  SLUICE_RETURN_IF_ERROR(backend_->StreamWait(FeedStream::kCompute, slot.copy_done));
  SLUICE_RETURN_IF_ERROR(backend_->Record(slot.compute_start, FeedStream::kCompute));
  ++handed_;
  ++stats_.steps;
  if (k == 0) stats_.first_batch_seconds += Since(t0);
  *out = &slot.view;
  return Status::OK();
}

Status Feeder::Settle() {
  SLUICE_RETURN_IF_ERROR(backend_->SynchronizeAll());
  for (uint64_t j = std::max<uint64_t>(resolved_, 1); j < handed_; ++j)
    SLUICE_RETURN_IF_ERROR(ResolveTiming(j));
  resolved_ = std::max<uint64_t>(handed_, 1);
  finished_ = true;
  return Status::OK();
}

Status Feeder::Finish() {
  if (finished_) return Status::OK();
  if (handed_ > 0) {
    // The last batch handed out: the caller is done enqueuing its step.
    Slot& last = *slots_[(handed_ - 1) % slots_.size()];
    SLUICE_RETURN_IF_ERROR(backend_->Record(last.compute_done, FeedStream::kCompute));
    last.read = true;
  }
  return Settle();
}

Status Feeder::Rewind() {
  if (!finished_)
    return Status::InvalidArgument("Feeder::Rewind before the epoch ended or Finish() was called");
  fetched_ = 0;
  handed_ = 0;
  resolved_ = 1;
  source_end_ = false;
  finished_ = false;
  return Status::OK();
}

FeedStats Feeder::stats() const {
  FeedStats s = stats_;
  const size_t cap = stats_.recent_waits.size();
  const size_t kept = static_cast<size_t>(std::min<uint64_t>(stats_.timed_steps, cap));
  s.recent_waits.clear();
  s.recent_waits.reserve(kept);
  const size_t first = (wait_next_ + cap - kept) % cap;
  for (size_t i = 0; i < kept; ++i)
    s.recent_waits.push_back(stats_.recent_waits[(first + i) % cap]);
  return s;
}

}  // namespace sluice::gpu
