// Padded batches: row i of batch j is record plan.records[first + i]; features [rows, T, F] and
// token ids [rows, longest] padded with zeros (batch.h). A conversation dataset's rows are its
// renderings, and with audio turns the batch carries their audio (conversation_audio.h) as packed
// batches do, each row's audio turns in its slots.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "features/half.h"
#include "loader/allocator.h"
#include "loader/collator.h"
#include "loader/mix.h"
#include "loader/padded_conversation.h"
#include "loader/token_ids.h"

namespace sluice::loader {
namespace {

class PaddedCollator final : public Collator {
 public:
  using Collator::Collator;

  Status Plan(const IndexColumns& index, uint64_t epoch, const std::vector<WorldSegment>& earlier,
              EpochPlan* plan) const override {
    const LoaderOptions& o = *ctx_.options;
    if (ctx_.dataset->mixed()) {
      std::vector<double> weights;
      for (const MixSource& s : ctx_.dataset->mix().sources) weights.push_back(s.weight);
      return MakeMixedPlan(index, weights, ctx_.dataset->mix().epoch_records, o.batching, o.seed,
                           epoch, earlier, o.rank, o.world, plan);
    }
    return MakeEpochPlan(index, o.batching, o.seed, epoch, earlier, o.rank, o.world, plan);
  }

  // Token ids [rows, longest row's count]: from the index's counts, which are exact for stored
  // ids and for text counted by shardify. Records tokenized online without a count may still
  // grow a buffer in Finish (EpochStats::pool_allocations counts it).
  uint64_t MaxTokens(uint32_t j) const override {
    const PlannedBatch& pb = plan_->batches[j];
    uint64_t longest = 0;
    for (uint64_t e = pb.first; e < pb.first + pb.entries; ++e)
      longest = std::max<uint64_t>(longest, index_->tokens[plan_->records[e]]);
    return longest;
  }

  AudioShape BatchAudio(uint32_t j) const override {
    if (ctx_.audio == nullptr) return {};
    const PlannedBatch& pb = plan_->batches[j];
    return ctx_.audio->Shape({plan_->records.data() + pb.first, pb.rows});
  }

  uint32_t OpenBatchCap(int) const override { return ctx_.options->open_batches; }

  Status OpenRows(uint32_t j, BatchBuffer* b, uint64_t* allocations) const override {
    const PlannedBatch& pb = plan_->batches[j];
    const bool audio = ctx_.extractor->audio();
    BatchFields& f = b->fields();
    b->row_tokens.resize(pb.rows);
    f.row_loss_mask = ctx_.conversation != nullptr;
    if (f.row_loss_mask) b->row_loss.resize(pb.rows);
    int32_t* lengths = static_cast<int32_t*>(f.lengths.data());
    for (uint32_t row = 0; row < pb.rows; ++row) {
      const uint64_t r = plan_->records[pb.first + row];
      const shards::ShardReader& shard = ctx_.dataset->shard(index_->shard_of(r));
      f.keys[row] = shard.key(index_->local_index(r));
      f.record_ids[row] = r;
      ClearRowText(&f.texts[row], &b->row_tokens[row]);
      if (f.row_loss_mask) b->row_loss[row].clear();
      lengths[row] = audio ? static_cast<int32_t>(index_->length[r]) : 0;
    }
    return OpenAudio(j, b, allocations);
  }

  Status Decode(const ReadItem& item, const shards::RecordView& rv, const shards::RecordEntry& e,
                std::string_view shard, DecodeScratch* s, BatchBuffer* b) const override {
    if (ctx_.conversation != nullptr) return DecodeConversationRow(item, rv, e, shard, s, b);
    BatchFields& f = b->fields();
    const size_t row = item.row;
    const FeatureExtractor& fx = *ctx_.extractor;
    if (fx.audio()) {
      const size_t dsize = DTypeSize(f.dtype);
      const size_t row_values = static_cast<size_t>(f.frames) * f.dim;
      char* row_base = static_cast<char*>(f.features.data()) + row * row_values * dsize;
      const size_t values = static_cast<size_t>(index_->length[item.record]) * f.dim;
      float* dst = reinterpret_cast<float*>(row_base);
      if (f.dtype != DType::kFloat32) {
        if (s->feats.size() < values) s->feats.resize(values);
        dst = s->feats.data();
      }
      const Status st = fx.Compute(rv, e, shard, plan_->seed, plan_->epoch, item.record, s, dst);
      if (!st.ok()) return Status::Corruption(st.message());
      if (f.dtype == DType::kFloat16)
        features::FloatToHalf(dst, values, reinterpret_cast<uint16_t*>(row_base));
      else if (f.dtype == DType::kBFloat16)
        features::FloatToBFloat16(dst, values, reinterpret_cast<uint16_t*>(row_base));
      std::memset(row_base + values * dsize, 0, (row_values - values) * dsize);
    }
    if (const shards::FieldView* text = rv.Find(shards::FieldType::kText))
      f.texts[row].assign(text->data, text->size);
    std::vector<int32_t>& ids = b->row_tokens[row];
    if (const shards::FieldView* t = rv.Find(shards::FieldType::kTokens)) {
      std::span<const int32_t> stored;
      SLUICE_RETURN_IF_ERROR(StoredTokenIds(*t, "tokens", &stored));
      ids.assign(stored.begin(), stored.end());
    } else if (ctx_.options->tokenizer) {
      ids.clear();
      const Status st = ctx_.options->tokenizer(f.texts[row], &ids);
      if (!st.ok()) return Status::Corruption(st.message());
      // A dataset counted by its tokenizer (shardify --store text) planned with these counts.
      const uint64_t want = index_->tokens[item.record];
      if (want > 0) return CheckTokenizerCount(ids.size(), want);
    }
    return Status::OK();
  }

  void CopyRow(BatchBuffer* b, size_t from, size_t to) const override {
    BatchFields& f = b->fields();
    char* data = static_cast<char*>(f.features.data());
    const size_t row_bytes = RowBytes(f);
    std::memcpy(data + to * row_bytes, data + from * row_bytes, row_bytes);
    int32_t* lengths = static_cast<int32_t*>(f.lengths.data());
    lengths[to] = lengths[from];
    f.texts[to] = f.texts[from];
    b->row_tokens[to] = b->row_tokens[from];
    if (f.row_loss_mask) b->row_loss[to] = b->row_loss[from];
    if (f.num_audio > 0) b->audio_source[to] = static_cast<int32_t>(from);
  }

  void ClearRow(BatchBuffer* b, size_t row) const override {
    BatchFields& f = b->fields();
    const size_t row_bytes = RowBytes(f);
    std::memset(static_cast<char*>(f.features.data()) + row * row_bytes, 0, row_bytes);
    static_cast<int32_t*>(f.lengths.data())[row] = 0;
    ClearRowText(&f.texts[row], &b->row_tokens[row]);
    if (f.row_loss_mask) b->row_loss[row].clear();
    if (f.num_audio > 0) b->audio_source[row] = -1;
  }

  // Tokens [rows, longest], zero-padded.
  Status Finish(BatchBuffer* b, uint64_t* allocations, CollatedCounts* counts) const override {
    BatchFields& f = b->fields();
    const size_t rows = f.size;
    for (size_t row = 0; f.num_audio > 0 && row < rows; ++row)
      if (b->audio_source[row] != static_cast<int32_t>(row)) {
        SLUICE_RETURN_IF_ERROR(
            ConversationAudio::RefillRows(b->audio_first, b->audio_source, &f, allocations));
        break;
      }
    size_t max_tokens = 0;
    for (size_t i = 0; i < rows; ++i) max_tokens = std::max(max_tokens, b->row_tokens[i].size());
    f.max_tokens = static_cast<int64_t>(max_tokens);
    if (max_tokens > 0) {
      const size_t need = rows * max_tokens * sizeof(int32_t);
      bool grew = false;
      // A buffer grown for an outlier batch (over max_padded_tokens, which Start did not reserve
      // for) goes back to the pool's size at its next ordinary batch, so that one long transcript
      // holds one buffer's worth of memory, not every buffer it passes through.
      if (need <= b->token_reserve &&
          f.tokens.capacity() >= 2 * std::max<size_t>(b->token_reserve, kBatchArrayUnit)) {
        f.tokens.Reset();
        if (!f.tokens.Reserve(b->token_reserve, &grew))
          return Status::IOError("batch allocator: out of memory for tokens");
        *allocations += grew;
      }
      if (!f.tokens.Reserve(need, &grew))
        return Status::IOError("batch allocator: out of memory for tokens");
      *allocations += grew;
      int32_t* tokens = static_cast<int32_t*>(f.tokens.data());
      for (size_t i = 0; i < rows; ++i) {
        const std::vector<int32_t>& ids = b->row_tokens[i];
        std::memcpy(tokens + i * max_tokens, ids.data(), ids.size() * sizeof(int32_t));
        std::memset(tokens + i * max_tokens + ids.size(), 0,
                    (max_tokens - ids.size()) * sizeof(int32_t));
      }
      if (f.row_loss_mask) SLUICE_RETURN_IF_ERROR(FinishLossMask(b, max_tokens, allocations));
    }
    const int32_t* lengths = static_cast<const int32_t*>(f.lengths.data());
    int32_t* token_lengths = static_cast<int32_t*>(f.token_lengths.data());
    for (size_t i = 0; i < rows; ++i) {
      token_lengths[i] = static_cast<int32_t>(b->row_tokens[i].size());
      counts->tokens += b->row_tokens[i].size();
      counts->frames += static_cast<uint64_t>(lengths[i]);
      counts->duration += index_->duration[f.record_ids[i]];
    }
    // Conversation audio handed out (EpochStats::frames): every audio turn of the rows.
    const int32_t* audio_lengths = static_cast<const int32_t*>(f.audio_lengths.data());
    for (size_t a = 0; a < f.num_audio; ++a)
      counts->frames += static_cast<uint64_t>(audio_lengths[a]);
    return Status::OK();
  }

 private:
  // A conversation's row: its rendering's ids (their count the plan's, from the index) and, at
  // the audio call point, its audio.
  Status DecodeConversationRow(const ReadItem& item, const shards::RecordView& rv,
                               const shards::RecordEntry& e, std::string_view shard,
                               DecodeScratch* s, BatchBuffer* b) const {
    // Per decode thread, keeping their capacity: no allocation per record once warm.
    thread_local std::vector<shards::ConversationTurn> turns;
    thread_local RenderedConversation rendered;
    thread_local std::string where;
    where.assign(shard);
    where += ": record '";
    where +=
        ctx_.dataset->shard(index_->shard_of(item.record)).key(index_->local_index(item.record));
    where += "'";
    SLUICE_RETURN_IF_ERROR(RenderConversationRecord(*ctx_.conversation, rv, item.record, e.duration,
                                                    where, index_->tokens[item.record], &turns,
                                                    &rendered));
    BatchFields& f = b->fields();
    if (const shards::FieldView* text = rv.Find(shards::FieldType::kText))
      f.texts[item.row].assign(text->data, text->size);
    std::vector<int32_t>& ids = b->row_tokens[item.row];
    ids.assign(rendered.ids.begin(), rendered.ids.end());
    // As packed rows: input k's loss is its target's, the id at k + 1; the last predicts nothing.
    std::vector<uint8_t>& mask = b->row_loss[item.row];
    const size_t n = rendered.ids.size();
    mask.resize(n);
    for (size_t k = 0; k < n; ++k) mask[k] = k + 1 < n && rendered.loss[k + 1] != 0;
    return FillPaddedConversationAudio(ctx_.audio, rv, turns, rendered, item.row, item.record,
                                       plan_->seed, plan_->epoch, where, s, b);
  }

  // The loss mask [rows, max_tokens] from the rows' masks, zero on padding, in memory Loader::Start
  // reserved (a byte per id of the pool's token reserve); an outlier batch's growth goes back at
  // the next ordinary one, as its ids' do.
  static Status FinishLossMask(BatchBuffer* b, size_t max_tokens, uint64_t* allocations) {
    BatchFields& f = b->fields();
    const size_t rows = f.size, need = rows * max_tokens;
    const size_t reserve = b->token_reserve / sizeof(int32_t);
    bool grew = false;
    if (need <= reserve &&
        f.loss_mask.capacity() >= 2 * std::max<size_t>(reserve, kBatchArrayUnit)) {
      f.loss_mask.Reset();
      if (!f.loss_mask.Reserve(reserve, &grew))
        return Status::IOError("batch allocator: out of memory for the loss mask");
      *allocations += grew;
    }
    if (!f.loss_mask.Reserve(need, &grew))
      return Status::IOError("batch allocator: out of memory for the loss mask");
    *allocations += grew;
    uint8_t* mask = static_cast<uint8_t*>(f.loss_mask.data());
    for (size_t i = 0; i < rows; ++i) {
      const std::vector<uint8_t>& m = b->row_loss[i];
      std::memcpy(mask + i * max_tokens, m.data(), m.size());
      std::memset(mask + i * max_tokens + m.size(), 0, max_tokens - m.size());
    }
    return Status::OK();
  }

  // Batch j's audio slots: row after row, each row's conversation's audio turns in span order
  // (audio_first: each row's first slot, then the count), in memory that Loader::Start reserved
  // for the plan's largest (this only guards it).
  Status OpenAudio(uint32_t j, BatchBuffer* b, uint64_t* allocations) const {
    BatchFields& f = b->fields();
    f.num_audio = 0;
    if (ctx_.audio == nullptr) return Status::OK();
    const PlannedBatch& pb = plan_->batches[j];
    b->audio_first.resize(pb.rows + 1);
    b->audio_source.resize(pb.rows);
    uint32_t slot = 0;
    for (uint32_t row = 0; row < pb.rows; ++row) {
      b->audio_first[row] = slot;
      b->audio_source[row] = static_cast<int32_t>(row);
      slot += ctx_.audio->audio_turns(plan_->records[pb.first + row]);
    }
    b->audio_first[pb.rows] = slot;
    return ctx_.audio->ReserveBatch(BatchAudio(j), "batch", j, &f, allocations);
  }

  // A row's text and ids keep their capacity for the row's next record, except an outlier's:
  // beyond these sizes (far over any utterance's transcript) the memory is given back, so that a
  // long transcript does not stay behind in every row it passes through.
  static void ClearRowText(std::string* text, std::vector<int32_t>* ids) {
    constexpr size_t kKeepTextBytes = 64 << 10, kKeepIds = 16 << 10;
    if (text->capacity() > kKeepTextBytes) std::string().swap(*text);
    if (ids->capacity() > kKeepIds) std::vector<int32_t>().swap(*ids);
    text->clear();
    ids->clear();
  }
  static size_t RowBytes(const BatchFields& f) {
    return static_cast<size_t>(f.frames) * f.dim * DTypeSize(f.dtype);
  }
};

}  // namespace

std::unique_ptr<Collator> NewPaddedCollator(const CollatorContext& ctx) {
  return std::make_unique<PaddedCollator>(ctx);
}

}  // namespace sluice::loader
