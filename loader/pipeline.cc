#include "loader/pipeline.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <string>

#include <oneapi/tbb/parallel_pipeline.h>

#include "features/half.h"
#include "loader/token_ids.h"

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

// A record tokenized online must give the count the index holds for it (shardify --store text
// counted it), or every later token of a packed stream shifts: InvalidArgument, which stops the
// epoch under either corrupt policy.
Status CheckTokenizerCount(size_t got, uint64_t want) {
  if (got == want) return Status::OK();
  return Status::InvalidArgument(
      "the tokenizer gives " + std::to_string(got) + " token ids, the index counted " + std::to_string(want) +
      " (the dataset was counted with another tokenizer or normalisation; use the dataset's own: leave "
      "LoaderOptions::tokenizer empty)");
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
  for (Batch* b : queue_.Drain()) ctx_.pool->Release(b);
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

void EpochPipeline::OpenBatch(uint32_t j) {
  Batch* b = ctx_.pool->Acquire();
  if (b == nullptr) return;
  opened_[j] = 1;
  RaiseMax(&max_open_, static_cast<uint64_t>(open_.fetch_add(1) + 1));
  const PlannedBatch& pb = plan_->batches[j];
  const FeatureExtractor& fx = *ctx_.extractor;
  const LoaderOptions& opt = *ctx_.options;
  b->epoch_ = plan_->epoch;
  b->index_ = j;
  b->size_ = pb.rows;
  b->dim_ = fx.audio() ? fx.dim() : 0;
  b->frames_ = fx.audio() ? static_cast<int64_t>(pb.max_length) : 0;
  b->dtype_ = opt.dtype;
  b->max_tokens_ = 0;
  b->seq_len_ = plan_->seq_len;
  b->repeated_ = pb.repeated;
  b->skipped_ = 0;
  b->remaining_ = pb.entries;  // items the collate stage counts in
  // Loader::Start reserved every pooled batch for the plan's largest; this only guards that.
  bool grew = false, grew_lengths = false;
  if (!b->features_.Reserve(std::max<size_t>(b->features_bytes(), 1), &grew) ||
      !b->lengths_.Reserve(pb.rows * sizeof(int32_t), &grew_lengths) ||
      !b->token_lengths_.Reserve(pb.rows * sizeof(int32_t), nullptr))
    throw StageError{Status::IOError("batch allocator: out of memory for batch " +
                                     std::to_string(j) + " (" +
                                     std::to_string(b->features_bytes()) + " bytes)")};
  allocations_.fetch_add(grew + grew_lengths, std::memory_order_relaxed);
  b->keys_.resize(pb.rows);
  b->texts_.resize(pb.rows);
  b->record_ids_.resize(pb.rows);
  b->row_tokens_.resize(pb.rows);
  b->row_ok_.assign(pb.rows, 1);
  if (plan_->seq_len > 0) {
    OpenPackedRows(j, b);
    slots_[j] = b;
    return;
  }
  int32_t* lengths = static_cast<int32_t*>(b->lengths_.data());
  for (uint32_t row = 0; row < pb.rows; ++row) {
    const uint64_t r = plan_->records[pb.first + row];
    const shards::ShardReader& shard = ctx_.dataset->shard(ctx_.index->shard_of(r));
    b->keys_[row] = shard.key(ctx_.index->local_index(r));
    b->record_ids_[row] = r;
    b->texts_[row].clear();
    b->row_tokens_[row].clear();
    lengths[row] = fx.audio() ? static_cast<int32_t>(ctx_.index->length[r]) : 0;
  }
  slots_[j] = b;
}

// A packed batch: every row holds L + 1 ids, written by the decode stage from the documents of
// its entries; keys and record ids name the document of each row's first token.
void EpochPipeline::OpenPackedRows(uint32_t j, Batch* b) {
  const PlannedBatch& pb = plan_->batches[j];
  const size_t width = plan_->seq_len + 1;
  b->max_tokens_ = static_cast<int64_t>(width);
  bool grew = false;
  if (!b->tokens_.Reserve(pb.rows * width * sizeof(int32_t), &grew))
    throw StageError{Status::IOError("batch allocator: out of memory for packed batch " +
                                     std::to_string(j))};
  allocations_.fetch_add(grew, std::memory_order_relaxed);
  b->sequences_.resize(pb.rows);
  int32_t* lengths = static_cast<int32_t*>(b->lengths_.data());
  int32_t* token_lengths = static_cast<int32_t*>(b->token_lengths_.data());
  for (uint32_t row = 0; row < pb.rows; ++row) {
    b->sequences_[row] = plan_->sequences[static_cast<uint64_t>(j) * pb.rows + row];
    b->texts_[row].clear();
    lengths[row] = 0;
    token_lengths[row] = static_cast<int32_t>(width);
  }
  // Entries are row after row, each row's first is the document of its first token.
  for (uint64_t e = pb.first, end = pb.first + pb.entries; e < end; ++e) {
    const uint32_t row = plan_->row_of(e, pb);
    if (e > pb.first && plan_->row_of(e - 1, pb) == row) continue;
    const uint64_t r = plan_->records[e];
    b->record_ids_[row] = r;
    b->keys_[row] = ctx_.dataset->shard(ctx_.index->shard_of(r)).key(ctx_.index->local_index(r));
  }
}

// The part of the item's document that falls in its row: the row covers stream tokens
// [a, a + L + 1) and the document [s + m*T, s + n + m*T) for every wrap m of the stream.
void EpochPipeline::CopyPackedTokens(const ReadItem& item, const int32_t* ids, uint64_t n,
                                     Batch* b) const {
  const uint64_t L = plan_->seq_len, T = plan_->stream_tokens;
  const uint64_t a = b->sequences_[item.row] * L, end = a + L + 1;
  const uint64_t s = plan_->record_offset[item.record];
  int32_t* row = static_cast<int32_t*>(b->tokens_.data()) + item.row * (L + 1);
  for (uint64_t m = a / T; m <= (end - 1) / T; ++m) {
    const uint64_t lo = std::max(a, s + m * T), hi = std::min(end, s + n + m * T);
    if (lo < hi) std::memcpy(row + (lo - a), ids + (lo - s - m * T), (hi - lo) * sizeof(int32_t));
  }
}

// A packed document's ids: the record's own, or the tokenizer's (cached per thread). Either way
// their count must be the index's, which placed every document in the stream: Corruption for a
// stored field that disagrees (damage the checksum missed cannot happen, but a hand-made index
// can), InvalidArgument for a tokenizer that disagrees with the one that counted, which no
// record of the epoch could survive, so it stops the epoch under either policy.
Status EpochPipeline::PackedIds(const ReadItem& item, const shards::RecordView& rv,
                                DecodeScratch* s, const int32_t** ids, uint64_t* n) const {
  const uint64_t want = ctx_.index->tokens[item.record];
  if (const shards::FieldView* f = rv.Find(shards::FieldType::kTokens)) {
    std::span<const int32_t> stored;  // into the block: fields are 8-byte aligned in it
    SLUICE_RETURN_IF_ERROR(StoredTokenIds(*f, "tokens", &stored));
    *ids = stored.data();
    *n = stored.size();
    if (*n != want)
      return Status::Corruption("the record holds " + std::to_string(*n) +
                                " token ids, its index entry " + std::to_string(want));
    return Status::OK();
  }
  const size_t slot = item.record % DecodeScratch::kTokenSlots;
  std::vector<int32_t>& v = s->ids[slot];
  if (s->ids_record[slot] != item.record) {
    const shards::FieldView* text = rv.Find(shards::FieldType::kText);
    if (text == nullptr) return Status::Corruption("neither token ids nor text in the record");
    if (!ctx_.options->tokenizer) return Status::Corruption("no token ids in the record");
    s->ids_record[slot] = ~uint64_t{0};
    v.clear();
    const Status ts = ctx_.options->tokenizer(text->bytes(), &v);
    if (!ts.ok()) return Status::InvalidArgument("tokenizer: " + ts.message());
    s->ids_record[slot] = item.record;
  }
  SLUICE_RETURN_IF_ERROR(CheckTokenizerCount(v.size(), want));
  *ids = v.data();
  *n = v.size();
  return Status::OK();
}

void EpochPipeline::DecodeStage(Token* t) {
  const auto t0 = Clock::now();
  DecodeScratch& s = ctx_.scratch->local();
  const ReadStep& step = schedule_->steps[t->step];
  if (step.block == kBarrierBlock) return;
  const shards::ShardReader& shard = ctx_.dataset->shard(ctx_.index->block_shard[step.block]);
  if (t->status.ok())
    t->status = shard.DecodeBlock(ctx_.index->block_local[step.block], t->compressed.view(), &s.raw);
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
  Batch* b = slots_[item.batch];
  const size_t row = item.row;
  const ReadStep& step = schedule_->steps[t->step];
  const shards::ShardReader& shard = ctx_.dataset->shard(ctx_.index->block_shard[step.block]);
  const uint32_t local_block = ctx_.index->block_local[step.block];
  const uint64_t local = ctx_.index->local_index(item.record);
  // Packed rows take several items, possibly decoded on several threads at once: atomic stores.
  auto mark_lost = [&] {
    std::atomic_ref<uint8_t>(b->row_ok_[row]).store(0, std::memory_order_relaxed);
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

  if (plan_->seq_len > 0) {
    const int32_t* ids = nullptr;
    uint64_t n = 0;
    st = PackedIds(item, rv, s, &ids, &n);
    if (!st.ok()) return lose(st);
    CopyPackedTokens(item, ids, n, b);
    return;
  }
  const FeatureExtractor& fx = *ctx_.extractor;
  const LoaderOptions& opt = *ctx_.options;
  if (fx.audio()) {
    const size_t dsize = DTypeSize(b->dtype_);
    const size_t row_values = static_cast<size_t>(b->frames_) * b->dim_;
    char* row_base = static_cast<char*>(b->features_.data()) + row * row_values * dsize;
    const size_t values = static_cast<size_t>(ctx_.index->length[item.record]) * b->dim_;
    float* dst = reinterpret_cast<float*>(row_base);
    if (b->dtype_ != DType::kFloat32) {
      if (s->feats.size() < values) s->feats.resize(values);
      dst = s->feats.data();
    }
    st = fx.Compute(rv, e, shard.name(), plan_->seed, plan_->epoch, item.record, s, dst);
    if (!st.ok()) return lose(Status::Corruption(st.message()));
    if (b->dtype_ == DType::kFloat16)
      features::FloatToHalf(dst, values, reinterpret_cast<uint16_t*>(row_base));
    else if (b->dtype_ == DType::kBFloat16)
      features::FloatToBFloat16(dst, values, reinterpret_cast<uint16_t*>(row_base));
    std::memset(row_base + values * dsize, 0, (row_values - values) * dsize);
  }
  if (const shards::FieldView* f = rv.Find(shards::FieldType::kText))
    b->texts_[row].assign(f->data, f->size);
  std::vector<int32_t>& ids = b->row_tokens_[row];
  if (const shards::FieldView* f = rv.Find(shards::FieldType::kTokens)) {
    std::span<const int32_t> stored;
    st = StoredTokenIds(*f, "tokens", &stored);
    if (!st.ok()) return lose(st);
    ids.assign(stored.begin(), stored.end());
  } else if (opt.tokenizer) {
    ids.clear();
    st = opt.tokenizer(b->texts_[row], &ids);
    if (!st.ok()) return lose(Status::Corruption(st.message()));
    // A dataset counted by its tokenizer (shardify --store text) planned with these counts.
    const uint64_t want = ctx_.index->tokens[item.record];
    if (want > 0) {
      st = CheckTokenizerCount(ids.size(), want);
      if (!st.ok()) return lose(st);
    }
  }
}

void EpochPipeline::CollateStage(Token* t) {
  const auto t0 = Clock::now();
  in_flight_.fetch_sub(1);
  const bool skip = ctx_.options->corrupt == CorruptPolicy::kSkip && t->status.IsCorruption();
  if (!t->status.ok() && !skip) throw StageError{t->status};
  const ReadStep& step = schedule_->steps[t->step];
  for (uint32_t k = 0; k < step.num_items; ++k) {
    const uint32_t j = schedule_->items[step.first_item + k].batch;
    slots_[j]->remaining_--;
    collated_[j] = 1;
  }
  collate_ns_.fetch_add(NanosSince(t0), std::memory_order_relaxed);
  // Only batches this stage has seen rows of: their slots were set by the read stage of an earlier
  // or this token, which happens before this stage runs; opened_ is the read stage's alone.
  // They are queued together, without waiting for room: the pool bounds the queue (ready_queue.h).
  const auto t1 = Clock::now();
  uint64_t e = next_emit_;
  finished_.clear();
  while (e < slots_.size() && collated_[e] && slots_[e]->remaining_ == 0) {
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
// a key when none is intact, so shapes and counts stay as planned. `data` holds the batch's rows
// of `row_bytes` each: its features, or a packed batch's ids.
void EpochPipeline::RefillLostRows(Batch* b, char* data, size_t row_bytes) {
  const size_t rows = b->size_;
  const bool packed = b->seq_len_ > 0;
  int32_t* lengths = static_cast<int32_t*>(b->lengths_.data());
  size_t good = 0;
  while (good < rows && !b->row_ok_[good]) ++good;
  for (size_t i = 0; i < rows; ++i) {
    if (b->row_ok_[i]) continue;
    b->skipped_++;
    if (good < rows) {
      std::memcpy(data + i * row_bytes, data + good * row_bytes, row_bytes);
      b->keys_[i] = b->keys_[good];
      b->record_ids_[i] = b->record_ids_[good];
      if (packed) {
        b->sequences_[i] = b->sequences_[good];
      } else {
        lengths[i] = lengths[good];
        b->texts_[i] = b->texts_[good];
        b->row_tokens_[i] = b->row_tokens_[good];
      }
    } else {
      std::memset(data + i * row_bytes, 0, row_bytes);
      b->keys_[i] = std::string_view();
      if (!packed) {
        lengths[i] = 0;
        b->texts_[i].clear();
        b->row_tokens_[i].clear();
      }
    }
  }
}

// Packed rows are complete as planned, [B, L + 1] ids each.
void EpochPipeline::FinishPackedBatch(Batch* b) {
  const size_t rows = b->size_, width = static_cast<size_t>(b->max_tokens_);
  RefillLostRows(b, static_cast<char*>(b->tokens_.data()), width * sizeof(int32_t));
  batches_.fetch_add(1, std::memory_order_relaxed);
  utterances_.fetch_add(rows, std::memory_order_relaxed);
  skipped_.fetch_add(b->skipped_, std::memory_order_relaxed);
  token_ids_.fetch_add(rows * static_cast<uint64_t>(b->seq_len_), std::memory_order_relaxed);
}

void EpochPipeline::FinishBatch(Batch* b) {
  if (b->seq_len_ > 0) return FinishPackedBatch(b);
  const size_t rows = b->size_;
  const size_t row_bytes = static_cast<size_t>(b->frames_) * b->dim_ * DTypeSize(b->dtype_);
  RefillLostRows(b, static_cast<char*>(b->features_.data()), row_bytes);
  const int32_t* lengths = static_cast<const int32_t*>(b->lengths_.data());
  // Tokens [rows, L], zero-padded.
  size_t max_tokens = 0;
  for (size_t i = 0; i < rows; ++i) max_tokens = std::max(max_tokens, b->row_tokens_[i].size());
  b->max_tokens_ = static_cast<int64_t>(max_tokens);
  int32_t* token_lengths = static_cast<int32_t*>(b->token_lengths_.data());
  if (max_tokens > 0) {
    bool grew = false;
    if (!b->tokens_.Reserve(rows * max_tokens * sizeof(int32_t), &grew))
      throw StageError{Status::IOError("batch allocator: out of memory for tokens")};
    allocations_.fetch_add(grew, std::memory_order_relaxed);
    int32_t* tokens = static_cast<int32_t*>(b->tokens_.data());
    for (size_t i = 0; i < rows; ++i) {
      const std::vector<int32_t>& ids = b->row_tokens_[i];
      std::memcpy(tokens + i * max_tokens, ids.data(), ids.size() * sizeof(int32_t));
      std::memset(tokens + i * max_tokens + ids.size(), 0,
                  (max_tokens - ids.size()) * sizeof(int32_t));
    }
  }
  uint64_t frames = 0, duration = 0, token_ids = 0;
  for (size_t i = 0; i < rows; ++i) {
    token_lengths[i] = static_cast<int32_t>(b->row_tokens_[i].size());
    token_ids += b->row_tokens_[i].size();
    frames += static_cast<uint64_t>(lengths[i]);
    duration += ctx_.index->duration[b->record_ids_[i]];
  }
  batches_.fetch_add(1, std::memory_order_relaxed);
  utterances_.fetch_add(rows, std::memory_order_relaxed);
  skipped_.fetch_add(b->skipped_, std::memory_order_relaxed);
  repeated_.fetch_add(b->repeated_, std::memory_order_relaxed);
  frames_.fetch_add(frames, std::memory_order_relaxed);
  padded_frames_.fetch_add(rows * static_cast<uint64_t>(b->frames_), std::memory_order_relaxed);
  duration_.fetch_add(duration, std::memory_order_relaxed);
  token_ids_.fetch_add(token_ids, std::memory_order_relaxed);
}

Status EpochPipeline::Pop(Batch** out) {
  *out = queue_.Pop();
  if (*out != nullptr) return Status::OK();
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
  s->padded_frames = padded_frames_;
  const int rate = ctx_.extractor->sample_rate();
  s->audio_seconds = rate > 0 ? static_cast<double>(duration_.load()) / rate : 0.0;
  s->blocks_read = blocks_read_;
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
