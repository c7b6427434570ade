#include "loader/loader.h"

#include <algorithm>
#include <string>
#include <thread>

#include "loader/dataset_tokenizer.h"
#include "loader/pack.h"
#include "loader/pipeline.h"

namespace sluice::loader {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

Loader::~Loader() { Stop(); }

Status Loader::Open(const std::string& dir, const LoaderOptions& options,
                    std::unique_ptr<Loader>* out) {
  if (options.world < 1 || options.rank < 0 || options.rank >= options.world)
    return Status::InvalidArgument("rank " + std::to_string(options.rank) +
                                   " is outside world size " + std::to_string(options.world));
  if (options.ready_batches < 1 || options.consumer_batches < 1)
    return Status::InvalidArgument("ready_batches and consumer_batches must be at least 1");
  std::unique_ptr<Loader> l(new Loader());
  l->options_ = options;
  shards::ReadOptions ro;
  ro.verify_checksums = options.verify_checksums;
  SLUICE_RETURN_IF_ERROR(shards::Dataset::Open(dir, ro, &l->dataset_));
  SLUICE_RETURN_IF_ERROR(FeatureExtractor::Create(l->dataset_->manifest(), options, &l->extractor_));
  const FeatureExtractor* fx = l->extractor_.get();
  BuildIndexColumns(*l->dataset_, [fx](const shards::RecordEntry& e) { return fx->Length(e); },
                    &l->index_);
  if (l->index_.num_records() == 0) return Status::InvalidArgument(dir + ": the dataset has no records");
  if (options.select) {
    l->index_.selected.resize(l->index_.num_records());
    uint64_t kept = 0;
    for (uint64_t r = 0; r < l->index_.num_records(); ++r) {
      const bool in = options.select(l->dataset_->shard(l->index_.shard_of(r)).key(l->index_.local_index(r)));
      l->index_.selected[r] = in;
      kept += in;
    }
    if (kept == 0)
      return Status::InvalidArgument(dir + ": LoaderOptions::select accepts none of its " +
                                     std::to_string(l->index_.num_records()) + " records");
  }
  // Records that hold text without ids are tokenized online; with no tokenizer given, by the
  // dataset's own (manifest.json "tokenizer"), so that a dataset made with shardify text
  // --tokenizer SPEC --store text needs no wiring. A given tokenizer wins.
  const shards::Manifest& m = l->dataset_->manifest();
  const bool stores_ids = m.has_field("tokens");
  if (!l->options_.tokenizer && !stores_ids && !m.tokenizer.is_null())
    SLUICE_RETURN_IF_ERROR(LoadRecordTokenizer(m, dir, m.kind == "text", &l->options_.tokenizer));
  if (options.packing.seq_len > 0) {
    if (l->extractor_->audio())
      return Status::InvalidArgument("packing (seq_len) is for text datasets; " + dir +
                                     " holds audio");
    if (options.packing.batch_size == 0 || options.packing.chunk_tokens == 0)
      return Status::InvalidArgument("packing: batch_size and chunk_tokens must be at least 1");
    for (uint64_t r = 0; r < l->index_.num_records(); ++r)
      if (l->index_.in_epochs(r) && l->index_.tokens[r] == 0)
        return Status::InvalidArgument(
            dir + ": packing (seq_len) needs each record's token count in the index, and record '" +
            std::string(l->dataset_->shard(l->index_.shard_of(r)).key(l->index_.local_index(r))) +
            "' has none. HINT: make the dataset with shardify text --tokenizer SPEC (ids stored) "
            "or --tokenizer SPEC --store text (counted, tokenized online)");
    if (!stores_ids && !l->options_.tokenizer)
      return Status::InvalidArgument(
          dir + ": packing needs token ids: the records hold text only and neither "
          "manifest.json nor LoaderOptions::tokenizer names a tokenizer");
    // Read units of OpenBatchCap: the runs of records sharing a block and a shuffle chunk.
    const std::vector<uint64_t> chunks = PackChunks(l->index_, options.packing.chunk_tokens);
    l->read_unit_.resize(l->index_.num_records());
    uint32_t unit = 0;
    for (size_t c = 0; c + 1 < chunks.size(); ++c)
      for (uint64_t r = chunks[c]; r < chunks[c + 1]; ++r) {
        if (r > 0 && (r == chunks[c] || l->index_.block_of[r] != l->index_.block_of[r - 1])) ++unit;
        l->read_unit_[r] = unit;
      }
    l->num_read_units_ = unit + 1;
  }

  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  l->threads_ = options.threads > 0 ? options.threads : cores;
  // Tokens: enough for every thread to decode a block while the serial ends each hold one,
  // so no stage starves; more would only add memory (one compressed block per token).
  l->tokens_ = options.tokens_in_flight > 0 ? options.tokens_in_flight : 2 * l->threads_ + 2;
  l->pool_ = std::make_unique<BatchPool>(options.allocator);
  l->arena_ = std::make_unique<tbb::task_arena>(l->threads_);
  l->scratch_ = std::make_unique<tbb::enumerable_thread_specific<DecodeScratch>>();
  *out = std::move(l);
  return Status::OK();
}

void Loader::Stop() {
  pipeline_.reset();  // cancels and joins; returns its batches to the pool
  for (Batch* b : held_) pool_->Release(b);
  held_.clear();
  started_ = false;
}

// Packed batches are small (B x (L+1) ids) while one block holds the tokens of many of them:
// capping open batches at the audio default would read every block several times and serialise
// the pipeline on barrier steps. So the cap is raised from the widest run of batches one read
// unit (the records sharing a block and a shuffle chunk) feeds in this plan, `span`, which is
// about (a block's tokens + a record shuffle window's tokens) / (B x L) plus the sequence shuffle
// window, and is bounded by the shard format's block size, not the dataset's:
//  - Rows of the stream's tail wrap to its beginning (the tail rule, pack.h); the documents they
//    repeat from there are not counted in their unit's run, which would otherwise span the whole
//    epoch and lift the cap, and with it the pool, to every batch a straddling block feeds.
//    Those documents' block is read once more for the last batches instead.
//  - The cap is span x (tokens + 1): the read stage runs up to `tokens` steps ahead of the
//    collate stage, and each step opens up to a unit's run of batches while the batches of the
//    steps in flight are still open. A cap of the span alone makes the schedule insert barrier
//    steps all along the epoch (1024 barriers for 213 blocks on 22 M ids at B 16, L 512, 2
//    threads), which hold the read stage until collate catches up: one decoding thread at a time.
// Each block is then read once per shuffle chunk it holds records of (a block straddling two
// chunks feeds two far-apart places of the stream) and the pool is a function of the options and
// the block size (the schedule's exact bound is usually well under the cap).
uint32_t Loader::OpenBatchCap() const {
  if (plan_.seq_len == 0 || options_.open_batches == 0) return options_.open_batches;
  constexpr uint32_t kNone = 0xffffffffu;
  const uint64_t L = plan_.seq_len, T = plan_.stream_tokens;
  std::vector<uint32_t> first(num_read_units_, kNone), last(num_read_units_, 0);
  uint64_t span = 0;
  for (uint32_t j = 0; j < plan_.batches.size(); ++j) {
    const PlannedBatch& pb = plan_.batches[j];
    for (uint64_t e = pb.first; e < pb.first + pb.entries; ++e) {
      const uint64_t r = plan_.records[e];
      const uint64_t a =
          plan_.sequences[static_cast<uint64_t>(j) * pb.rows + plan_.row_of(e, pb)] * L;
      // A document that ends before the row starts is in it through the wrap.
      if (a + L + 1 > T && plan_.record_offset[r] + ix_->tokens[r] <= a) continue;
      const uint32_t u = read_unit_[r];
      if (first[u] == kNone) first[u] = j;
      last[u] = j;
      span = std::max<uint64_t>(span, last[u] - first[u] + 1);
    }
  }
  const uint64_t cap = span * (static_cast<uint64_t>(tokens_) + 1);
  return static_cast<uint32_t>(
      std::max<uint64_t>(options_.open_batches, std::min<uint64_t>(cap, 1u << 16)));
}

Status Loader::Start(uint64_t epoch, uint64_t start_batch) {
  const auto t0 = std::chrono::steady_clock::now();  // the epoch's wall time includes planning
  Stop();
  ix_ = &index_;
  if (extractor_->speed_perturb()) {  // lengths of this epoch's perturbed records
    epoch_index_ = index_;
    for (uint64_t r = 0; r < index_.num_records(); ++r) {
      const shards::RecordEntry& e =
          dataset_->shard(index_.shard_of(r)).record(index_.local_index(r));
      epoch_index_.length[r] = extractor_->EpochLength(e, options_.seed, epoch, r);
    }
    ix_ = &epoch_index_;
  }
  if (options_.packing.seq_len > 0)
    SLUICE_RETURN_IF_ERROR(MakePackedPlan(*ix_, options_.batching, options_.packing, options_.seed,
                                          epoch, options_.rank, options_.world, &plan_));
  else
    SLUICE_RETURN_IF_ERROR(MakeEpochPlan(*ix_, options_.batching, options_.seed, epoch,
                                         options_.rank, options_.world, &plan_));
  if (start_batch > plan_.batches.size())
    return Status::InvalidArgument("resume at batch " + std::to_string(start_batch) + " of epoch " +
                                   std::to_string(epoch) + ", which has " +
                                   std::to_string(plan_.batches.size()) + " batches on rank " +
                                   std::to_string(options_.rank));
  MakeReadSchedule(*ix_, plan_, start_batch, tokens_, OpenBatchCap(), &schedule_);

  // Pool: batches being filled, queued and held by the consumer (schedule.h explains the bound).
  const size_t pool_size = schedule_.max_open_batches + options_.ready_batches +
                           options_.consumer_batches;
  // Token ids [rows, longest row's count]: from the index's counts, which are exact for stored
  // ids and for text counted by shardify. Records tokenized online without a count may still
  // grow a buffer (EpochStats::pool_allocations counts it).
  uint64_t feature_bytes = 0, max_rows = 0, token_bytes = 0;
  for (size_t j = start_batch; j < plan_.batches.size(); ++j) {
    const PlannedBatch& pb = plan_.batches[j];
    feature_bytes = std::max<uint64_t>(feature_bytes, pb.rows * pb.max_length * extractor_->dim() *
                                                          DTypeSize(options_.dtype));
    max_rows = std::max<uint64_t>(max_rows, pb.rows);
    if (plan_.seq_len == 0) {
      uint64_t longest = 0;
      for (uint64_t e = pb.first; e < pb.first + pb.entries; ++e)
        longest = std::max<uint64_t>(longest, ix_->tokens[plan_.records[e]]);
      token_bytes = std::max<uint64_t>(token_bytes, pb.rows * longest * sizeof(int32_t));
    }
  }
  // Packed batches are all [B, L + 1]: their ids are the batch's memory.
  if (plan_.seq_len > 0) token_bytes = max_rows * (plan_.seq_len + 1ull) * sizeof(int32_t);
  const uint64_t max_bytes = feature_bytes + token_bytes;
  if (options_.memory_budget > 0) {
    const uint64_t need = max_bytes * pool_size;
    if (need > options_.memory_budget)
      return Status::InvalidArgument(
          "the batch pool needs up to " + std::to_string(need) + " bytes (" +
          std::to_string(pool_size) + " batches of up to " + std::to_string(max_bytes) +
          " bytes), over memory_budget " + std::to_string(options_.memory_budget) +
          ": lower max_frames / max_padded_frames, ready_batches or shuffle_window");
  }
  pool_->Reserve(pool_size);
  // All batch memory is taken here, at the plan's largest batch, so Next() never allocates.
  uint64_t allocations = 0;
  if (!pool_->ReserveMemory(feature_bytes, max_rows, token_bytes, &allocations))
    return Status::IOError("batch allocator: out of memory reserving " + std::to_string(pool_size) +
                           " batches of " + std::to_string(max_bytes) + " bytes");

  epoch_ = epoch;
  start_batch_ = start_batch;
  taken_ = 0;
  done_ = false;
  error_ = Status::OK();
  started_ = true;
  consumer_ = EpochStats();
  consumer_.epoch = epoch;
  consumer_.start_batch = start_batch;
  consumer_.split_batches = plan_.split_batches;
  consumer_.max_open_bound = schedule_.max_open_batches;
  consumer_.reread_blocks = schedule_.rereads;
  consumer_.start_allocations = allocations;
  consumer_.pool_bytes = pool_size * max_bytes;
  start_time_ = t0;

  PipelineContext ctx;
  ctx.dataset = dataset_.get();
  ctx.index = ix_;
  ctx.extractor = extractor_.get();
  ctx.options = &options_;
  ctx.pool = pool_.get();
  ctx.arena = arena_.get();
  ctx.scratch = scratch_.get();
  pipeline_ = std::make_unique<EpochPipeline>(ctx, &plan_, &schedule_, tokens_);
  pipeline_->Start();
  return Status::OK();
}

Status Loader::Next(const Batch** batch) {
  *batch = nullptr;
  if (!started_) return Status::InvalidArgument("Loader::Next before Start");
  if (done_) return error_;  // after the end: nullptr again, or the same error
  // Recycle the batch handed out consumer_batches calls ago: the consumer is done with it.
  while (held_.size() >= static_cast<size_t>(options_.consumer_batches)) {
    pool_->Release(held_.front());
    held_.pop_front();
  }
  const auto t0 = std::chrono::steady_clock::now();
  Batch* b = nullptr;
  Status st = pipeline_->Pop(&b);
  consumer_.wait_seconds += SecondsSince(t0);
  if (b == nullptr) {
    done_ = true;
    error_ = st;
    consumer_.wall_seconds = SecondsSince(start_time_);
    return st;
  }
  if (taken_ == 0) consumer_.first_batch_seconds = SecondsSince(start_time_);
  ++taken_;
  held_.push_back(b);
  *batch = b;
  return Status::OK();
}

EpochStats Loader::stats() const {
  EpochStats s = consumer_;
  if (pipeline_) pipeline_->Snapshot(&s);
  if (!done_ && started_) s.wall_seconds = SecondsSince(start_time_);
  s.pool_batches = pool_->size();
  return s;
}

}  // namespace sluice::loader
