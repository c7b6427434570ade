#include "loader/loader_impl.h"

#include <algorithm>
#include <functional>
#include <string>
#include <thread>

#include "base/cpus.h"
#include "features/encoder_frames.h"
#include "loader/augment_sources.h"
#include "loader/dataset_tokenizer.h"
#include "loader/pipeline.h"
#include "loader/record_filter.h"
#include "loader/speed_spelling.h"
#include "loader/stored_segments.h"
#include "shards/checksum.h"

namespace sluice::loader {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Options of the other batching (packed or padded) are refused rather than ignored.
Status CheckBatchingKind(const LoaderOptions& options) {
  if (options.packing.seq_len > 0 &&
      (options.batching.bucket_2d || options.batching.max_padded_sum))
    return Status::InvalidArgument(
        "batching.bucket_2d and max_padded_sum shape padded batches; packed rows (seq_len " +
        std::to_string(options.packing.seq_len) +
        ") have neither. HINT: --seq-len 0 for padded batches, or leave them out");
  if (options.packing.seq_len == 0 && options.packing.balance_ranks)
    return Status::InvalidArgument(
        "packing.balance_ranks deals packed rows to the ranks; padded batches (seq_len 0) have "
        "none. HINT: --seq-len N, or leave out --balance-ranks");
  return Status::OK();
}

// window_seconds: each stored recording's first chunk stands for one window (SelectWindows); off
// at 0. InvalidArgument naming `dir` for a value out of range, a dataset without audio, speed
// perturbation, or an option that would read a window's columns or tokens.
Status PlanWindows(const std::string& dir, const LoaderOptions& options, const FeatureExtractor& fx,
                   const Sources& dataset, IndexColumns* index) {
  if (!(options.window_seconds >= 0 && options.window_seconds <= 86400))
    return Status::InvalidArgument(dir + ": window_seconds " +
                                   std::to_string(options.window_seconds) +
                                   ": expected seconds from 0 (off) to 86400");
  if (options.window_seconds == 0) return Status::OK();
  if (!fx.audio() || fx.length_perturb())
    return Status::InvalidArgument(
        dir +
        ": window_seconds cuts windows of stored recordings: it needs an audio dataset "
        "and no speed_perturb or tempo perturbation (windows are planned at their unperturbed "
        "length)");
  // A window stands on its recording's first chunk, whose metadata columns are null and whose
  // token count is unknown until the window is cut: what reads them would act on nothing.
  if (!options.filter.empty() || options.batching.bucket_2d || options.batching.max_tokens ||
      options.batching.max_padded_sum)
    return Status::InvalidArgument(
        dir +
        ": window_seconds: a window's text and tokens are known only when it is cut, so "
        "filter, bucket_2d, max_tokens and max_padded_sum cannot read them. HINT: leave them "
        "out, or train on the segments (window_seconds 0)");
  SLUICE_RETURN_IF_ERROR(SelectWindows(
      dataset, WindowSamples(options.window_seconds, fx.sample_rate()),
      [&fx](const shards::RecordEntry& e) { return fx.Length(e); }, index));
  return Status::OK();
}

// Waveform augmentation and its clips apply to audio datasets only; `o` as Open resolved it
// (speed in the chain's spelling).
Status CheckAugmentationApplies(const std::string& dir, const LoaderOptions& o,
                                const FeatureExtractor& fx, const std::string& kind) {
  const bool augments = features::WaveformAugmentEnabled(o.waveform_augment) ||
                        !o.noise_data.empty() || !o.rir_data.empty() || !o.babble_data.empty() ||
                        o.waveform_augment.speed.probability > 0 ||
                        o.waveform_augment.tempo.probability > 0;
  if (!augments || fx.audio()) return Status::OK();
  return Status::InvalidArgument(dir +
                                 ": waveform_augment (speed_perturb and tempo included), "
                                 "noise_data, rir_data and babble_data apply to audio datasets; "
                                 "this is a " +
                                 kind + " dataset. HINT: leave them out");
}

}  // namespace

Status Loader::Open(const std::string& dir, const LoaderOptions& options,
                    std::unique_ptr<Loader>* out) {
  MixOptions one;
  one.sources.push_back({dir, 1.0});
  return Open(one, options, out);
}

Status Loader::Open(const MixOptions& mix, const LoaderOptions& options,
                    std::unique_ptr<Loader>* out) {
  std::unique_ptr<LoaderImpl> impl;
  SLUICE_RETURN_IF_ERROR(LoaderImpl::Open(mix, options, &impl));
  *out = std::move(impl);
  return Status::OK();
}

LoaderImpl::~LoaderImpl() { Stop(); }

Status LoaderImpl::Open(const MixOptions& mix, const LoaderOptions& options,
                        std::unique_ptr<LoaderImpl>* out) {
  if (options.world < 1 || options.rank < 0 || options.rank >= options.world)
    return Status::InvalidArgument("rank " + std::to_string(options.rank) +
                                   " is outside world size " + std::to_string(options.world));
  if (options.ready_batches < 1 || options.consumer_batches < 1)
    return Status::InvalidArgument("ready_batches and consumer_batches must be at least 1");
  SLUICE_RETURN_IF_ERROR(CheckBatchingKind(options));
  std::unique_ptr<LoaderImpl> l(new LoaderImpl());
  l->options_ = options;
  // One spelling of speed perturbation from here on (the chain's), whichever was given.
  SLUICE_RETURN_IF_ERROR(MoveSpeedPerturbIntoChain(&l->options_));
  SLUICE_RETURN_IF_ERROR(Sources::Open(mix, options, &l->dataset_));
  // Errors name the dataset, or the first source of a mixture.
  const std::string& dir = l->dataset_->dir();
  SLUICE_RETURN_IF_ERROR(
      FeatureExtractor::Create(l->dataset_->manifest(), l->options_, &l->extractor_));
  SLUICE_RETURN_IF_ERROR(
      CheckAugmentationApplies(dir, l->options_, *l->extractor_, l->dataset_->manifest().kind));
  const FeatureExtractor* fx = l->extractor_.get();
  BuildSourceIndex(*l->dataset_, [fx](const shards::RecordEntry& e) { return fx->Length(e); },
                   &l->index_);
  if (l->index_.num_records() == 0)
    return Status::InvalidArgument(dir + ": the dataset has no records");
  // Before order and rank split: every epoch, rank and resume plans the same records. Chunks of
  // stored recordings first: they are audio, not samples, and no filter counts them.
  SLUICE_RETURN_IF_ERROR(DeselectChunks(*l->dataset_, &l->index_));
  SLUICE_RETURN_IF_ERROR(PlanWindows(dir, options, *fx, *l->dataset_, &l->index_));
  // Records that hold text without ids are tokenized online; with no tokenizer given, by the
  // dataset's own (manifest.json "tokenizer"), so that a dataset made with shardify text
  // --tokenizer SPEC --store text needs no wiring. A given tokenizer wins.
  const shards::Manifest& m = l->dataset_->manifest();
  const bool stores_ids = m.has_field("tokens");
  // The model file is read where the records are: a URL's from the URL (through its cache).
  if (!l->options_.tokenizer && !stores_ids && !m.tokenizer->is_null())
    SLUICE_RETURN_IF_ERROR(LoadRecordTokenizer(m, l->dataset_->lead().storage(), m.kind == "text",
                                               &l->options_.tokenizer));
  ConversationColumns conversation;
  SLUICE_RETURN_IF_ERROR(l->OpenConversations(dir, &conversation));
  // Before order and rank split: every epoch, rank and resume plans the same records. After the
  // conversation spec, whose counts a filter may name.
  SLUICE_RETURN_IF_ERROR(SelectRecords(
      dir, options.filter, options.select,
      [&l](uint64_t r) {
        return l->dataset_->shard(l->index_.shard_of(r)).key(l->index_.local_index(r));
      },
      l->dataset_->manifest().sample_rate, l->conversation_ ? &conversation : nullptr,
      MetadataColumns{l->dataset_->manifest().columns,
                      [&l](uint32_t shard) -> const shards::ColumnTable& {
                        return l->dataset_->shard(shard).columns();
                      }},
      &l->index_, &l->filtered_));
  if (l->extractor_->audio()) SLUICE_RETURN_IF_ERROR(l->LoadAugmentClips());
  // The rows' costs replace the index's token counts, which the packed plan budgets; padded,
  // a conversation's length is its encoder frames (the padded input, bucket_2d's first axis).
  if (l->conversation_) {
    SLUICE_RETURN_IF_ERROR(SetConversationTokens(conversation.llm_tokens, &l->index_));
    if (options.packing.seq_len == 0) l->index_.length = conversation.encoder_frames;
  }
  // The one place that tells packed batches from padded ones (collator.h).
  const CollatorContext cc{l->dataset_.get(), l->extractor_.get(), &l->options_,
                           l->conversation_.get(), l->conversation_audio_.get()};
  if (options.packing.seq_len > 0)
    SLUICE_RETURN_IF_ERROR(NewPackedCollator(cc, l->index_, dir, &l->collator_));
  else
    l->collator_ = NewPaddedCollator(cc);
  l->DescribeFeatures();

  const int cores = UsableCores();  // the affinity mask and cgroup quota, not the host
  l->threads_ = options.threads > 0 ? options.threads : cores;
  // Tokens: enough for every thread to decode a block while the serial ends each hold one,
  // so no stage starves; more would only add memory (one compressed block per token).
  l->tokens_ = options.blocks_in_flight > 0 ? options.blocks_in_flight : 2 * l->threads_ + 2;
  l->pool_ = std::make_unique<BatchPool>(options.allocator);
  l->arena_ = std::make_unique<tbb::task_arena>(l->threads_);
  l->scratch_ = std::make_unique<tbb::enumerable_thread_specific<DecodeScratch>>();
  *out = std::move(l);
  return Status::OK();
}

// The chain's clips, once for all threads, after the selection (the babble pool is drawn among
// the records the epochs hold); their identities join the resolved options (the run record),
// their memory the budget that Start checks.
Status LoaderImpl::LoadAugmentClips() {
  AugmentSources clips;
  SLUICE_RETURN_IF_ERROR(LoadAugmentSources(
      options_, *dataset_, dataset_->manifest().sample_rate,
      [this](uint64_t r) { return index_.in_epochs(r); }, &clips));
  options_.noise_content = clips.noise_content;
  options_.rir_content = clips.rir_content;
  options_.babble_content = clips.babble_content;
  augment_bytes_ = clips.bytes;
  extractor_->set_waveform_sources(std::move(clips.clips));
  return Status::OK();
}

// What a batch's arrays hold (Loader::feature_info): the extractor's features, or for a
// conversation dataset with audio turns those of its turns.
void LoaderImpl::DescribeFeatures() {
  const FeatureExtractor& fx = *extractor_;
  info_.audio = fx.audio();
  info_.kind = fx.kind();
  info_.dim = fx.audio() ? fx.dim() : 0;
  info_.sample_rate = fx.audio() ? fx.sample_rate() : 0;
  info_.frame_shift_seconds = fx.frame_shift_seconds();
  info_.dtype = options_.dtype;
  if (conversation_audio_) {
    info_.audio_turns = true;
    info_.kind = options_.kind;
    info_.dim = conversation_audio_->dim();
    info_.sample_rate = dataset_->manifest().sample_rate;
  }
}

// A conversation dataset's rows are its records' renderings, so the template and the encoder
// spec are read here, once, and every record's cost is counted from the index (Open puts it in
// place of the index token count once the filter has read both): the packed plan then budgets
// rows in LLM tokens with no payload read (conversation_plan.h).
Status LoaderImpl::OpenConversations(const std::string& dir, ConversationColumns* columns) {
  const shards::Manifest& m = dataset_->manifest();
  const ConversationOptions& co = options_.conversation;
  // Only Open sets the contents: one given by hand would name files it never read.
  options_.conversation.chat_template_content.clear();
  options_.conversation.encoder_frames_content.clear();
  if (m.kind != "conversation") {
    if (!co.chat_template.empty() || !co.encoder_frames.empty())
      return Status::InvalidArgument(
          dir + " holds " + m.kind +
          " records: conversation.chat_template and conversation.encoder_frames are for "
          "conversation datasets (shardify conversations). HINT: leave them unset");
    return Status::OK();
  }
  // seq_len 0: padded rows, a conversation each (padded_conversation.h).
  Status st =
      options_.packing.seq_len > 0 ? CheckConversationPacking(options_.packing) : Status::OK();
  if (!st.ok()) return Status::InvalidArgument(dir + ": " + st.message());
  if (!m.has_field("tokens") || m.tokenizer->is_null())
    return Status::InvalidArgument(
        dir +
        ": the conversations hold no token ids, which their rows are made of. HINT: "
        "shardify conversations --tokenizer hf:PATH/tokenizer.json");
  std::unique_ptr<features::Tokenizer> tokenizer;
  SLUICE_RETURN_IF_ERROR(
      LoadDatasetTokenizer(*m.tokenizer, dataset_->lead().storage(), &tokenizer));
  // A mixture's plain ASR sources (sources.h) hold task conversations: one audio turn each.
  std::vector<const shards::ShardReader*> shards, conversation_shards;
  std::vector<uint8_t> asr_shards;
  std::vector<uint64_t> asr_records;
  for (size_t s = 0, g = 0; s < dataset_->size(); ++s) {
    const size_t end = g + dataset_->source(s).num_shards();
    if (dataset_->asr(s)) {
      asr_records.push_back(index_.source_first_record[s]);
      asr_records.push_back(index_.source_first_record[s + 1]);
    }
    for (; g < end; ++g) {
      shards.push_back(&dataset_->shard(g));
      asr_shards.push_back(dataset_->asr(s));
      if (!dataset_->asr(s)) conversation_shards.push_back(&dataset_->shard(g));
    }
  }
  // Text-only conversations (instruction data) need no encoder spec nor placeholder.
  bool audio_turns = dataset_->asr_sources();
  if (!audio_turns) SLUICE_RETURN_IF_ERROR(AnyAudioTurn(conversation_shards, &audio_turns));
  conversation_ = std::make_unique<ConversationSpec>();
  st = LoadConversationSpec(co, *tokenizer, m.sample_rate, audio_turns, conversation_.get());
  if (!st.ok()) return Status::InvalidArgument(dir + ": " + st.message());
  conversation_->asr_records = std::move(asr_records);
  for (size_t s = 0; s < dataset_->size(); ++s)
    if (dataset_->asr(s) && !conversation_->chat.has_task)
      return Status::InvalidArgument(
          dataset_->source(s).dir() + ": ASR records beside the conversations of " + dir +
          " become the template's task conversations, and " + co.chat_template +
          " declares no task. HINT: \"task\": {\"prompt\": \"Transcribe the audio.\"} in "
          "the template (docs/conversations.md, \"ASR datasets as task conversations\")");
  // Batches carry the audio turns' features (conversation_audio.h), as the feature options say.
  if (audio_turns) {
    st = ConversationAudio::Create(m, options_, shards, &conversation_audio_, asr_shards);
    if (!st.ok()) return Prefixed(st, dir);
  }
  // The run record names the template and the spec by what they mean, not where they are.
  options_.conversation.chat_template_content = shards::ChecksumHex(conversation_->chat.checksum);
  if (!co.encoder_frames.empty()) {
    const std::string spec = features::CanonicalEncoderFramesSpec(conversation_->frames);
    options_.conversation.encoder_frames_content =
        shards::ChecksumHex(shards::Checksum(spec.data(), spec.size()));
  }
  return ConversationIndexColumns(shards, conversation_->chat, conversation_->frames, true, columns,
                                  asr_shards);
}

void LoaderImpl::Stop() {
  pipeline_.reset();  // cancels and joins; returns its batches to the pool
  for (BatchBuffer* b : held_) pool_->Release(b);
  held_.clear();
  started_ = false;
}

Status LoaderImpl::PlanEpoch(uint64_t epoch, const std::vector<WorldSegment>& earlier,
                             IndexColumns* scratch, const IndexColumns** index,
                             EpochPlan* plan) const {
  *index = &index_;
  if (extractor_->length_perturb()) {  // lengths of this epoch's speed/tempo-perturbed records
    *scratch = index_;
    for (uint64_t r = 0; r < index_.num_records(); ++r) {
      const shards::RecordEntry& e =
          dataset_->shard(index_.shard_of(r)).record(index_.local_index(r));
      scratch->length[r] = extractor_->EpochLength(e, options_.seed, epoch, r);
    }
    *index = scratch;
  }
  return collator_->Plan(**index, epoch, earlier, plan);
}

Status LoaderImpl::CountBatches(uint64_t epoch, uint64_t* batches) const {
  IndexColumns scratch;
  const IndexColumns* index = nullptr;
  EpochPlan plan;
  SLUICE_RETURN_IF_ERROR(PlanEpoch(epoch, {}, &scratch, &index, &plan));
  *batches = plan.batches.size();
  return Status::OK();
}

Status LoaderImpl::ReservePool(uint64_t epoch, uint64_t start_batch, uint64_t* pool_bytes,
                               uint64_t* allocations) {
  // Pool: batches being filled, queued and held by the consumer (schedule.h explains the bound).
  const size_t pool_size = schedule_.max_open_batches + options_.ready_batches +
                           options_.consumer_batches;
  // Each pooled batch is reserved for the largest of the batches left; the shape is the whole
  // plan's.
  uint64_t feature_bytes = 0, max_rows = 0, token_bytes = 0, audio_count = 0, audio_bytes = 0;
  std::vector<uint64_t> outliers;  // ids bytes of each batch over padded_cap
  // Padded ids are reserved up to max_padded_tokens: a batch over it is one record with an
  // outlier transcript (the plan gives it a batch of its own), whose buffer grows in Finish and
  // shrinks back after. Packed rows are seq_len + 1 ids, a size the options set.
  const uint64_t padded_cap =
      options_.packing.seq_len == 0 ? options_.batching.max_padded_tokens * sizeof(int32_t) : 0;
  const uint64_t value_bytes = extractor_->dim() * DTypeSize(options_.dtype);
  shape_ = BatchShape();
  for (uint32_t j = 0; j < plan_.batches.size(); ++j) {
    const PlannedBatch& pb = plan_.batches[j];
    const uint64_t tokens = collator_->MaxTokens(j);
    const uint64_t frames = info_.audio ? pb.max_length : 0;
    shape_.rows = std::max<uint64_t>(shape_.rows, pb.rows);
    shape_.frames = std::max(shape_.frames, frames);
    shape_.padded_frames = std::max(shape_.padded_frames, pb.rows * frames);
    shape_.tokens = std::max(shape_.tokens, tokens);
    const AudioShape a = conversation_audio_ ? collator_->BatchAudio(j) : AudioShape();
    shape_.audio = std::max(shape_.audio, a.count);
    shape_.audio_frames = std::max(shape_.audio_frames, a.max_frames);
    shape_.padded_audio_frames = std::max(shape_.padded_audio_frames, a.count * a.max_frames);
    if (j < start_batch) continue;
    feature_bytes = std::max<uint64_t>(feature_bytes, pb.rows * pb.max_length * value_bytes);
    if (conversation_audio_) {
      audio_count = std::max(audio_count, a.count);
      audio_bytes = std::max(audio_bytes, a.count * a.max_frames * conversation_audio_->dim() *
                                              DTypeSize(options_.dtype));
    }
    max_rows = std::max<uint64_t>(max_rows, pb.rows);
    const uint64_t ids = pb.rows * tokens * sizeof(int32_t);
    if (padded_cap > 0 && ids > padded_cap) {
      outliers.push_back(ids);
    } else {
      token_bytes = std::max(token_bytes, ids);
    }
  }
  // Packed batches also carry positions, doc ids, loss masks and cu_seqlens (batch.h).
  const uint64_t L = plan_.seq_len;
  const uint64_t packed_bytes =
      L > 0 ? max_rows * (L * (sizeof(int32_t) + sizeof(int64_t) + 1 + sizeof(int32_t)) +
                          (L + 1) * sizeof(int32_t)) +
                  sizeof(int32_t)
            : 0;
  // Padded conversation rows: a loss mask byte per token id.
  const uint64_t mask_bytes = conversation_ && L == 0 ? token_bytes / sizeof(int32_t) : 0;
  // Conversation audio: its features, lengths and spans (batch.h).
  const uint64_t max_bytes = feature_bytes + token_bytes + packed_bytes + mask_bytes + audio_bytes +
                             audio_count * 4 * sizeof(int32_t);
  // At most pool_size batches are alive at once, so at most that many outliers, each in a
  // buffer grown from token_bytes to its ids.
  const size_t alive = std::min(outliers.size(), pool_size);
  std::partial_sort(outliers.begin(), outliers.begin() + alive, outliers.end(),
                    std::greater<uint64_t>());
  *pool_bytes = max_bytes * pool_size;
  for (size_t i = 0; i < alive; ++i) *pool_bytes += outliers[i] - token_bytes;
  if (options_.memory_budget > 0) {
    const uint64_t budget = options_.memory_budget;
    // The augmentation clips live as long as the loader, beside the pool.
    const uint64_t need = *pool_bytes + augment_bytes_;
    // Below one batch no pool size fits: the only remedies are a bigger budget or smaller
    // batches, so the error says that rather than naming the pool's options.
    if (max_bytes > budget)
      return Status::InvalidArgument(
          "memory_budget is " + std::to_string(budget) +
          " bytes, smaller than one batch: the largest batch of epoch " + std::to_string(epoch) +
          " needs " + std::to_string(max_bytes) + " bytes, and the batch pool " +
          std::to_string(need) + " bytes (" + std::to_string(pool_size) +
          " batches). HINT: raise memory_budget to at least " + std::to_string(need) +
          ", or lower batching.max_frames / batching.max_padded_frames");
    if (need > budget)
      return Status::InvalidArgument(
          "the batch pool needs up to " + std::to_string(need) + " bytes (" +
          std::to_string(pool_size) + " batches of up to " + std::to_string(max_bytes) +
          " bytes), over memory_budget " + std::to_string(budget) +
          ": lower batching.max_frames / batching.max_padded_frames, ready_batches or "
          "batching.shuffle_window");
  }
  pool_->Reserve(pool_size);
  // All batch memory is taken here, at the plan's largest batch, so Next() never allocates.
  if (!pool_->ReserveMemory(feature_bytes, max_rows, token_bytes, allocations) ||
      (plan_.seq_len > 0 && !pool_->ReservePacked(max_rows, plan_.seq_len, allocations)) ||
      (audio_count > 0 && !pool_->ReserveAudio(audio_count, audio_bytes, allocations)) ||
      (mask_bytes > 0 && !pool_->ReserveLossMask(mask_bytes, allocations)))
    return Status::IOError(
        "batch allocator: out of memory reserving " + std::to_string(pool_size) + " batches of " +
        std::to_string(max_bytes) +
        " bytes. HINT: lower batching.max_frames / batching.max_padded_frames (the largest "
        "batch), open_batches or ready_batches (batches in the pool); memory_budget checks this "
        "before allocating");
  return Status::OK();
}

Status LoaderImpl::Start(const ResumeState& state) {
  const auto t0 = std::chrono::steady_clock::now();  // the epoch's wall time includes planning
  Stop();
  const uint64_t epoch = state.epoch;
  // Another world size ends a stretch: its consumed batches join the history, and this world's
  // plan of the rest starts at its first batch. A stretch that took nothing is left out, so
  // every state has one history (plan.h, step 4).
  std::vector<WorldSegment> earlier = state.earlier;
  uint64_t start_batch = state.batches;
  if (state.world != 0 && state.world != options_.world) {
    if (state.batches > 0) earlier.push_back({state.world, state.batches});
    start_batch = 0;
  }
  if (earlier.size() > ResumeState::kMaxSegments)
    return Status::InvalidArgument(
        "resume of epoch " + std::to_string(epoch) + ": " + std::to_string(earlier.size()) +
        " changes of world size, over the limit of " + std::to_string(ResumeState::kMaxSegments) +
        "; resume at the epoch's start instead");
  SLUICE_RETURN_IF_ERROR(PlanEpoch(epoch, earlier, &epoch_index_, &ix_, &plan_));
  if (start_batch > plan_.batches.size())
    return Status::InvalidArgument("resume at batch " + std::to_string(start_batch) + " of epoch " +
                                   std::to_string(epoch) + ", which has " +
                                   std::to_string(plan_.batches.size()) + " batches on rank " +
                                   std::to_string(options_.rank));
  collator_->Bind(ix_, &plan_);
  MakeReadSchedule(*ix_, plan_, start_batch, tokens_, collator_->OpenBatchCap(tokens_), &schedule_);

  uint64_t pool_bytes = 0, allocations = 0;
  SLUICE_RETURN_IF_ERROR(ReservePool(epoch, start_batch, &pool_bytes, &allocations));

  epoch_ = epoch;
  start_batch_ = start_batch;
  earlier_ = std::move(earlier);
  taken_ = 0;
  done_ = false;
  error_ = Status::OK();
  started_ = true;
  consumer_ = EpochStats();
  consumer_.epoch = epoch;
  consumer_.start_batch = start_batch;
  consumer_.split_batches = plan_.split_batches;
  consumer_.consumed_records = plan_.consumed_records;
  consumer_.filtered = filtered_;
  for (const FilterCount& f : filtered_) consumer_.filtered_records += f.records;
  consumer_.sources.assign(plan_.source_records.size(), SourceStats());
  for (size_t s = 0; s < consumer_.sources.size(); ++s) {
    consumer_.sources[s].records = plan_.source_records[s];
    consumer_.sources[s].repeated = plan_.source_repeated[s];
  }
  consumer_.max_open_bound = schedule_.max_open_batches;
  consumer_.reread_blocks = schedule_.rereads;
  consumer_.start_allocations = allocations;
  consumer_.pool_bytes = pool_bytes;
  consumer_.stream_tokens = plan_.stream_tokens;
  consumer_.wrapped_tokens = plan_.wrapped_tokens;
  consumer_.consumed_sequences = plan_.consumed_sequences;
  consumer_.fit_rows = plan_.fit_rows;
  consumer_.fit_padding = plan_.fit_padding;
  consumer_.split_documents = plan_.split_documents;
  consumer_.truncated_documents = plan_.truncated_documents;
  consumer_.truncated_tokens = plan_.truncated_tokens;
  consumer_.skipped_documents = plan_.skipped_documents;
  consumer_.skipped_tokens = plan_.skipped_tokens;
  consumer_.rank_token_spread = plan_.rank_token_spread;
  consumer_.rank_token_ratio = plan_.rank_token_ratio;
  start_time_ = t0;
  storage_start_ = StorageNow();

  PipelineContext ctx;
  ctx.dataset = dataset_.get();
  ctx.index = ix_;
  ctx.extractor = extractor_.get();
  ctx.options = &options_;
  ctx.collator = collator_.get();
  ctx.pool = pool_.get();
  ctx.arena = arena_.get();
  ctx.scratch = scratch_.get();
  pipeline_ = std::make_unique<EpochPipeline>(ctx, &plan_, &schedule_, tokens_);
  pipeline_->Start();
  return Status::OK();
}

Status LoaderImpl::Next(const Batch** batch) {
  bool ready = false;
  return Take(batch, nullptr, &ready);
}

Status LoaderImpl::NextFor(const Batch** batch, std::chrono::nanoseconds timeout, bool* ready) {
  return Take(batch, &timeout, ready);
}

Status LoaderImpl::Take(const Batch** batch, const std::chrono::nanoseconds* timeout, bool* ready) {
  *batch = nullptr;
  *ready = true;
  if (!started_) return Status::InvalidArgument("Loader::Next before Start");
  if (done_) return error_;  // after the end: nullptr again, or the same error
  // Recycle the batch handed out consumer_batches calls ago: the consumer is done with it.
  // (After a NextFor that timed out, already done: held_ is below the bound.)
  while (held_.size() >= static_cast<size_t>(options_.consumer_batches)) {
    pool_->Release(held_.front());
    held_.pop_front();
  }
  const auto t0 = std::chrono::steady_clock::now();
  BatchBuffer* b = nullptr;
  Status st = timeout == nullptr ? pipeline_->Pop(&b) : pipeline_->PopFor(*timeout, &b, ready);
  consumer_.wait_seconds += SecondsSince(t0);
  if (!*ready) return Status::OK();
  if (b == nullptr) {
    done_ = true;
    error_ = st;
    // First: a block cache's Counters() waits for the entries the epoch is still writing, which
    // belong to the epoch's time (storage/cache_writer.h).
    storage_end_ = StorageNow();
    consumer_.wall_seconds = SecondsSince(start_time_);
    return st;
  }
  if (taken_ == 0) consumer_.first_batch_seconds = SecondsSince(start_time_);
  ++taken_;
  if (!consumer_.sources.empty()) {  // a mixture: rows per source
    const std::vector<uint64_t>& first = index_.source_first_record;
    for (uint64_t r : b->record_ids())
      consumer_.sources[std::upper_bound(first.begin(), first.end(), r) - first.begin() - 1]
          .rows++;
  }
  held_.push_back(b);
  *batch = b;
  return Status::OK();
}

EpochStats LoaderImpl::stats() const {
  EpochStats s = consumer_;
  if (pipeline_) pipeline_->Snapshot(&s);
  if (!done_ && started_) s.wall_seconds = SecondsSince(start_time_);
  s.pool_batches = pool_->size();
  s.threads = threads_;
  s.blocks_in_flight = tokens_;
  if (started_) s.storage = (done_ ? storage_end_ : StorageNow()) - storage_start_;
  return s;
}

shards::StorageCounters LoaderImpl::StorageNow() const {
  shards::StorageCounters c;
  for (size_t i = 0; i < dataset_->size(); ++i) c = c + dataset_->source(i).storage().Counters();
  return c;
}

}  // namespace sluice::loader
