#include "loader/pipeline.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <string>

#include <oneapi/tbb/parallel_pipeline.h>

#include "loader/stored_segments.h"

namespace sluice::loader {
namespace {

using Clock = std::chrono::steady_clock;

int64_t NanosSince(Clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
}

void RaiseMax(std::atomic<uint64_t>* max, uint64_t v) {
  uint64_t cur = max->load(std::memory_order_relaxed);
  while (v > cur && !max->compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}

// Carries a Status out of a stage; parallel_pipeline rethrows it on the calling thread after
// cancelling the other stages.
struct StageError {
  Status status;
};

}  // namespace

struct EpochPipeline::Token {
  uint32_t step = 0;
  shards::Buffer compressed;  // capacity kept from block to block: no allocation in steady state
  Status status;              // first failure in this block (read, checksum, a record)
  bool block_lost = false;    // the block itself failed: every row it fills is lost
};

EpochPipeline::EpochPipeline(const PipelineContext& ctx, const EpochPlan* plan,
                             const ReadSchedule* schedule, int tokens)
    : ctx_(ctx),
      plan_(plan),
      schedule_(schedule),
      tokens_(tokens),
      slots_(plan->batches.size(), nullptr),
      opened_(plan->batches.size(), 0),
      collated_(plan->batches.size(), 0),
      next_emit_(schedule->start_batch) {
  // Collate finishes at most the batches open at once in one step: no growth mid-epoch.
  finished_.reserve(std::max<size_t>(schedule->max_open_batches, 1));
  for (int i = 0; i < tokens_; ++i) ring_.push_back(std::make_unique<Token>());
}

EpochPipeline::~EpochPipeline() {
  Cancel();
  if (thread_.joinable()) thread_.join();
  // Every batch still held goes back: queued ones, and open ones never finished.
  for (BatchBuffer* b : queue_.Drain()) ctx_.pool->Release(b);
  for (uint64_t j = next_emit_; j < slots_.size(); ++j)
    if (slots_[j] != nullptr) ctx_.pool->Release(slots_[j]);
  ctx_.pool->Resume();
}

void EpochPipeline::Start() {
  thread_ = std::thread([this] { Run(); });
}

void EpochPipeline::Cancel() {
  cancelled_ = true;
  ctx_.pool->Interrupt();
  queue_.Close();
  tbb_ctx_.cancel_group_execution();
}

void EpochPipeline::Run() {
  Status st;
  try {
    ctx_.arena->execute([&] {
      tbb::parallel_pipeline(
          static_cast<size_t>(tokens_),
          tbb::make_filter<void, Token*>(tbb::filter_mode::serial_in_order,
                                         [this](tbb::flow_control& fc) { return ReadStage(fc); }) &
              tbb::make_filter<Token*, Token*>(tbb::filter_mode::parallel,
                                               [this](Token* t) {
                                                 DecodeStage(t);
                                                 return t;
                                               }) &
              tbb::make_filter<Token*, void>(tbb::filter_mode::serial_in_order,
                                             [this](Token* t) { CollateStage(t); }),
          tbb_ctx_);
    });
  } catch (const StageError& e) {
    st = e.status;
  } catch (const std::exception& e) {
    st = Status::IOError(std::string("loader pipeline stopped by an exception: ") + e.what());
  } catch (...) {
    st = Status::IOError("loader pipeline stopped by an unknown exception");
  }
  if (st.ok() && cancelled_ && next_emit_ < slots_.size())
    st = Status::IOError("loader pipeline cancelled");
  {
    std::lock_guard<std::mutex> lock(status_mu_);
    status_ = st;
  }
  queue_.Close();
}

EpochPipeline::Token* EpochPipeline::ReadStage(tbb::flow_control& fc) {
  if (cancelled_ || next_step_ >= schedule_->steps.size()) {
    fc.stop();
    return nullptr;
  }
  const auto t0 = Clock::now();
  const uint32_t s = next_step_++;
  Token* t = ring_[s % tokens_].get();
  t->step = s;
  t->status = Status::OK();
  t->block_lost = false;
  const ReadStep& step = schedule_->steps[s];
  AnnounceReads(s);
  if (step.block != kBarrierBlock) {
    const shards::ShardReader& shard = ctx_.dataset->shard(ctx_.index->block_shard[step.block]);
    t->status = shard.ReadCompressedBlock(ctx_.index->block_local[step.block], &t->compressed);
    blocks_read_.fetch_add(1, std::memory_order_relaxed);
    bytes_read_.fetch_add(t->compressed.size(), std::memory_order_relaxed);
  }
  for (uint32_t k = 0; k < step.num_items; ++k) {
    const uint32_t j = schedule_->items[step.first_item + k].batch;
    if (!opened_[j]) {
      OpenBatch(j);
      if (slots_[j] == nullptr) {  // interrupted while waiting for a free batch
        fc.stop();
        return nullptr;
      }
    }
  }
  RaiseMax(&max_in_flight_, static_cast<uint64_t>(in_flight_.fetch_add(1) + 1));
  read_ns_.fetch_add(NanosSince(t0), std::memory_order_relaxed);
  return t;
}

// Remote storage fetches the blocks of the next read_ahead steps while this one is read; the
// hint is cheap and ignored by local files. Each step is announced once.
void EpochPipeline::AnnounceReads(uint32_t s) {
  const size_t end =
      std::min<size_t>(schedule_->steps.size(), size_t{s} + 1 + ctx_.options->storage.read_ahead);
  next_hint_ = std::max(next_hint_, s);
  for (; next_hint_ < end; ++next_hint_) {
    const ReadStep& step = schedule_->steps[next_hint_];
    if (step.block == kBarrierBlock) continue;
    const shards::ShardReader& shard = ctx_.dataset->shard(ctx_.index->block_shard[step.block]);
    shard.WillNeedBlock(ctx_.index->block_local[step.block]);
  }
}

void EpochPipeline::OpenBatch(uint32_t j) {
  BatchBuffer* b = ctx_.pool->Acquire();
  if (b == nullptr) return;
  opened_[j] = 1;
  RaiseMax(&max_open_, static_cast<uint64_t>(open_.fetch_add(1) + 1));
  const PlannedBatch& pb = plan_->batches[j];
  const FeatureExtractor& fx = *ctx_.extractor;
  BatchFields& f = b->fields();
  f.epoch = plan_->epoch;
  f.index = j;
  f.size = pb.rows;
  f.dim = fx.audio() ? fx.dim() : 0;
  f.frames = fx.audio() ? static_cast<int64_t>(pb.max_length) : 0;
  f.dtype = ctx_.options->dtype;
  f.max_tokens = 0;
  f.num_audio = 0;
  f.seq_len = plan_->seq_len;
  f.repeated = pb.repeated;
  f.skipped = 0;
  b->remaining = pb.entries;  // items the collate stage counts in
  // Loader::Start reserved every pooled batch for the plan's largest; this only guards that.
  bool grew = false, grew_lengths = false;
  if (!f.features.Reserve(std::max<size_t>(b->features_bytes(), 1), &grew) ||
      !f.lengths.Reserve(pb.rows * sizeof(int32_t), &grew_lengths) ||
      !f.token_lengths.Reserve(pb.rows * sizeof(int32_t), nullptr))
    throw StageError{Status::IOError("batch allocator: out of memory for batch " +
                                     std::to_string(j) + " (" +
                                     std::to_string(b->features_bytes()) + " bytes)")};
  uint64_t allocations = grew + grew_lengths;
  f.keys.resize(pb.rows);
  f.texts.resize(pb.rows);
  f.record_ids.resize(pb.rows);
  b->row_ok.assign(pb.rows, 1);
  const Status st = ctx_.collator->OpenRows(j, b, &allocations);
  allocations_.fetch_add(allocations, std::memory_order_relaxed);
  if (!st.ok()) throw StageError{st};
  slots_[j] = b;
}

void EpochPipeline::DecodeStage(Token* t) {
  const auto t0 = Clock::now();
  DecodeScratch& s = ctx_.scratch->local();
  const ReadStep& step = schedule_->steps[t->step];
  if (step.block == kBarrierBlock) return;
  // A chunk block is kept within one step only, so what a step reads is the same on any thread.
  s.chunk_shard = nullptr;
  s.text_shard = nullptr;
  const shards::ShardReader& shard = ctx_.dataset->shard(ctx_.index->block_shard[step.block]);
  if (t->status.ok())
    t->status =
        shard.DecodeBlock(ctx_.index->block_local[step.block], t->compressed.view(), &s.raw);
  t->block_lost = !t->status.ok();
  for (uint32_t k = 0; k < step.num_items; ++k) {
    const ReadItem& item = schedule_->items[step.first_item + k];
    if (!t->status.ok() && !t->status.IsCorruption()) break;  // I/O errors stop the epoch
    if (!t->status.ok() && ctx_.options->corrupt == CorruptPolicy::kFail) break;
    DecodeItem(item, &s, t);
  }
  decode_ns_.fetch_add(NanosSince(t0), std::memory_order_relaxed);
}

void EpochPipeline::DecodeItem(const ReadItem& item, DecodeScratch* s, Token* t) {
  BatchBuffer* b = slots_[item.batch];
  const size_t row = item.row;
  const ReadStep& step = schedule_->steps[t->step];
  const shards::ShardReader& shard = ctx_.dataset->shard(ctx_.index->block_shard[step.block]);
  const uint32_t local_block = ctx_.index->block_local[step.block];
  const uint64_t local = ctx_.index->local_index(item.record);
  // Packed rows take several items, possibly decoded on several threads at once: atomic stores.
  auto mark_lost = [&] {
    std::atomic_ref<uint8_t>(b->row_ok[row]).store(0, std::memory_order_relaxed);
  };
  auto where = [&] {
    return shard.Where(local_block) + ": record '" + std::string(shard.key(local)) + "': ";
  };
  // Corruption: a lost row, which kSkip refills. InvalidArgument: stops the epoch.
  auto lose = [&](const Status& st) {
    mark_lost();
    if (t->status.ok())
      t->status = st.IsCorruption() ? Status::Corruption(where() + st.message())
                                    : Status::InvalidArgument(where() + st.message());
  };
  if (t->block_lost) {  // kSkip
    mark_lost();
    return;
  }
  const shards::RecordEntry& e = shard.record(local);
  const std::string_view payload = shard.RecordPayload(local, s->raw);
  shards::RecordView rv;
  Status st = shards::ParseRecord(payload.data(), payload.size(), shard.name(), &rv);
  if (!st.ok()) return lose(Status::Corruption(st.message()));
  shards::RecordEntry window_entry;
  const shards::RecordEntry* entry = &e;
  if (ctx_.index->stored_segments(item.record)) {
    uint64_t blocks = 0;
    if (ctx_.options->window_seconds > 0) {
      st = MakeWindow(shard, local, item.record, plan_->seed, plan_->epoch,
                      WindowSamples(ctx_.options->window_seconds, ctx_.extractor->sample_rate()), s,
                      &rv, &window_entry, &blocks);
      entry = &window_entry;
    } else {
      st = AddSegmentAudio(shard, local, s, &rv, &blocks);
    }
    segment_blocks_read_.fetch_add(blocks, std::memory_order_relaxed);
    if (st.IsIOError()) {  // the machine's, not the record's: stops the epoch
      mark_lost();
      if (t->status.ok()) t->status = Status::IOError(where() + st.message());
      return;
    }
    if (!st.ok()) return lose(st);
  }
  st = ctx_.collator->Decode(item, rv, *entry, shard.name(), s, b);
  if (!st.ok()) return lose(st);
}

void EpochPipeline::CollateStage(Token* t) {
  const auto t0 = Clock::now();
  in_flight_.fetch_sub(1);
  const bool skip = ctx_.options->corrupt == CorruptPolicy::kSkip && t->status.IsCorruption();
  if (!t->status.ok() && !skip) throw StageError{t->status};
  const ReadStep& step = schedule_->steps[t->step];
  for (uint32_t k = 0; k < step.num_items; ++k) {
    const uint32_t j = schedule_->items[step.first_item + k].batch;
    slots_[j]->remaining--;
    collated_[j] = 1;
  }
  collate_ns_.fetch_add(NanosSince(t0), std::memory_order_relaxed);
  // Only batches this stage has seen rows of: their slots were set by the read stage of an earlier
  // or this token, which happens before this stage runs; opened_ is the read stage's alone.
  // They are queued together, without waiting for room: the pool bounds the queue (ready_queue.h).
  const auto t1 = Clock::now();
  uint64_t e = next_emit_;
  finished_.clear();
  while (e < slots_.size() && collated_[e] && slots_[e]->remaining == 0) {
    FinishBatch(slots_[e]);
    finished_.push_back(slots_[e]);
    ++e;
  }
  collate_ns_.fetch_add(NanosSince(t1), std::memory_order_relaxed);
  if (finished_.empty()) return;
  open_.fetch_sub(static_cast<int64_t>(finished_.size()));
  if (!queue_.Push(finished_.data(), finished_.size())) return;  // cancelled: the destructor
                                                                 // recycles them
  next_emit_ = e;
}

// kSkip: a lost row becomes a copy of the first intact row of its batch, or an empty row without
// a key when none is intact, so shapes and counts stay as planned.
void EpochPipeline::RefillLostRows(BatchBuffer* b) const {
  BatchFields& f = b->fields();
  const size_t rows = f.size;
  size_t good = 0;
  while (good < rows && !b->row_ok[good]) ++good;
  for (size_t i = 0; i < rows; ++i) {
    if (b->row_ok[i]) continue;
    f.skipped++;
    if (good < rows) {
      ctx_.collator->CopyRow(b, good, i);
      f.keys[i] = f.keys[good];
      f.record_ids[i] = f.record_ids[good];
    } else {
      ctx_.collator->ClearRow(b, i);
      f.keys[i] = std::string_view();
    }
  }
}

void EpochPipeline::FinishBatch(BatchBuffer* b) {
  RefillLostRows(b);
  uint64_t allocations = 0;
  CollatedCounts counts;
  const Status st = ctx_.collator->Finish(b, &allocations, &counts);
  allocations_.fetch_add(allocations, std::memory_order_relaxed);
  if (!st.ok()) throw StageError{st};
  const size_t rows = b->size();
  batches_.fetch_add(1, std::memory_order_relaxed);
  utterances_.fetch_add(rows, std::memory_order_relaxed);
  skipped_.fetch_add(b->skipped(), std::memory_order_relaxed);
  repeated_.fetch_add(b->repeated(), std::memory_order_relaxed);
  frames_.fetch_add(counts.frames, std::memory_order_relaxed);
  padded_frames_.fetch_add(rows * static_cast<uint64_t>(b->frames()), std::memory_order_relaxed);
  duration_.fetch_add(counts.duration, std::memory_order_relaxed);
  token_ids_.fetch_add(counts.tokens, std::memory_order_relaxed);
  padding_tokens_.fetch_add(counts.padding, std::memory_order_relaxed);
  input_columns_.fetch_add(counts.columns, std::memory_order_relaxed);
}

Status EpochPipeline::Pop(BatchBuffer** out) {
  *out = queue_.Pop();
  if (*out != nullptr) return Status::OK();
  std::lock_guard<std::mutex> lock(status_mu_);
  return status_;
}

Status EpochPipeline::PopFor(std::chrono::nanoseconds timeout, BatchBuffer** out, bool* ready) {
  *out = nullptr;
  *ready = queue_.PopFor(timeout, out);
  if (!*ready || *out != nullptr) return Status::OK();
  std::lock_guard<std::mutex> lock(status_mu_);
  return status_;
}

void EpochPipeline::Snapshot(EpochStats* s) const {
  auto sec = [](const std::atomic<int64_t>& ns) { return ns.load() * 1e-9; };
  s->batches = batches_;
  s->utterances = utterances_;
  s->skipped_records = skipped_;
  s->repeated_records = repeated_;
  s->frames = frames_;
  s->tokens = token_ids_;
  s->padding_tokens = padding_tokens_;
  s->input_columns = input_columns_;
  s->padded_frames = padded_frames_;
  const int rate = ctx_.extractor->sample_rate();
  s->audio_seconds = rate > 0 ? static_cast<double>(duration_.load()) / rate : 0.0;
  s->blocks_read = blocks_read_;
  s->segment_blocks_read = segment_blocks_read_;
  s->bytes_read = bytes_read_;
  s->read_busy_seconds = sec(read_ns_);
  s->decode_busy_seconds = sec(decode_ns_);
  s->collate_busy_seconds = sec(collate_ns_);
  s->pool_allocations = allocations_;
  s->max_ready = queue_.max_size();
  s->max_open = max_open_;
  s->max_tokens = max_in_flight_;
}

}  // namespace sluice::loader
