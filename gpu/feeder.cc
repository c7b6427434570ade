#include "gpu/feeder.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <string>
#include <type_traits>

#include "gpu/batch_arrays.h"

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

using ArrayBytes = std::array<size_t, kBatchArrays>;

size_t At(BatchArray a) { return static_cast<size_t>(a); }

// Each array's room for a batch of capacity `c`.
ArrayBytes BytesFor(const FeedCapacity& c) {
  ArrayBytes out{};
  const size_t i32 = sizeof(int32_t);
  const size_t columns = c.packed_columns;
  for (int i = 0; i < kBatchArrays; ++i) {
    size_t& n = out[i];
    switch (static_cast<BatchArray>(i)) {
      case BatchArray::kFeatures: n = c.feature_bytes; break;
      case BatchArray::kLengths:
      case BatchArray::kTokenLengths: n = c.rows * i32; break;
      case BatchArray::kTokens: n = c.token_ids * i32; break;
      case BatchArray::kPositions: n = columns * i32; break;
      case BatchArray::kDocIds: n = columns * sizeof(int64_t); break;
      case BatchArray::kLossMask: n = c.loss_mask_bytes; break;
      // At most one segment per column, and the closing entry.
      case BatchArray::kCuSeqlens: n = columns > 0 ? (columns + 1) * i32 : 0; break;
      case BatchArray::kRowCuSeqlens: n = columns > 0 ? (columns + c.rows) * i32 : 0; break;
      case BatchArray::kAudioFeatures: n = c.audio_feature_bytes; break;
      case BatchArray::kAudioLengths: n = c.audio * i32; break;
      case BatchArray::kAudioSpans: n = c.audio * 3 * i32; break;
    }
  }
  return out;
}

// The bytes each array of `hb` needs (0 for those it does not have).
ArrayBytes BytesOf(const HostBatch& hb) {
  ArrayBytes out{};
  ForEachArray(hb, [&](BatchArray a, const auto&, size_t bytes) { out[At(a)] = bytes; });
  return out;
}

size_t SlotBytes(const ArrayBytes& c) {
  size_t total = 0;
  for (size_t n : c) total += AlignUp(n);
  return std::max(kAlign, total);
}

}  // namespace

// One device buffer and the events that order its reuse.
struct Feeder::Slot {
  void* memory = nullptr;
  ArrayBytes capacity{};       // each array's room, laid out in BatchArray order
  EventId copy_done = -1;      // copy stream: this slot's latest batch is on the device
  EventId compute_start = -1;  // compute stream: its step may start (timing)
  EventId compute_done = -1;   // compute stream: the step that read it is over (timing)
  bool read = false;           // compute_done was recorded at least once
  DeviceBatch view;

  // Where array `a` starts in the buffer.
  void* At(BatchArray a) const {
    size_t offset = 0;
    for (size_t i = 0; i < static_cast<size_t>(a); ++i) offset += AlignUp(capacity[i]);
    return static_cast<char*>(memory) + offset;
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
    slot->capacity = BytesFor(options.capacity);
    SLUICE_RETURN_IF_ERROR(be.AllocateDevice(SlotBytes(slot->capacity), &slot->memory));
    ++f->stats_.device_allocations;
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
  const ArrayBytes need = BytesOf(hb);
  ArrayBytes& c = slot->capacity;
  bool fits = true;
  for (int i = 0; i < kBatchArrays; ++i) fits = fits && need[i] <= c[i];
  if (fits) return Status::OK();
  // Bigger than the plan said: grow this buffer once. Only after the step that read it is over.
  if (slot->read) SLUICE_RETURN_IF_ERROR(backend_->Synchronize(slot->compute_done));
  SLUICE_RETURN_IF_ERROR(backend_->FreeDevice(slot->memory));
  slot->memory = nullptr;
  for (int i = 0; i < kBatchArrays; ++i) c[i] = std::max(c[i], need[i]);
  SLUICE_RETURN_IF_ERROR(backend_->AllocateDevice(SlotBytes(c), &slot->memory));
  ++stats_.device_allocations;
  ++stats_.grow_allocations;
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
  static_cast<BatchDims&>(v) = hb;
  if (hb.tokens == nullptr) v.max_tokens = 0;
  // Every array the host batch has: its place in the slot, then its copy. The device pointer is
  // null where the host's is.
  std::array<const void*, kBatchArrays> src{};
  ArrayBytes bytes{};
  ForEachArray(hb, [&](BatchArray a, const auto& p, size_t n) {
    src[At(a)] = p;
    bytes[At(a)] = n;
  });
  ForEachArray(v, [&](BatchArray a, auto& p, size_t) {
    using Ptr = std::remove_reference_t<decltype(p)>;
    p = src[At(a)] != nullptr ? static_cast<Ptr>(slot.At(a)) : nullptr;
  });
  for (int i = 0; i < kBatchArrays; ++i) {
    if (src[i] == nullptr || bytes[i] == 0) continue;
    SLUICE_RETURN_IF_ERROR(
        backend_->CopyToDevice(slot.At(static_cast<BatchArray>(i)), src[i], bytes[i]));
    stats_.bytes_copied += bytes[i];
    ++stats_.copies;
  }
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
