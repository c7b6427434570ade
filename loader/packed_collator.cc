// Packed batches (PackingOptions, pack.h, pack_fit.h): every row holds L + 1 ids, written by the
// decode stage from the documents of its entries (with their positions, doc ids and loss mask);
// keys and record ids name the document of each row's first token. The columns no document
// fills (the fits' padding) are written when the batch is opened, and cu_seqlens when it is
// finished, from the positions (a refilled row's are its copy's). A conversation dataset's
// batches also carry their audio turns (conversation_audio.h): each entry gets its slots when the
// batch is opened, the decode stage fills them beside the conversation's ids.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "features/encoder_frames.h"
#include "loader/chat_template.h"
#include "loader/collator.h"
#include "loader/pack.h"
#include "loader/pack_fit.h"
#include "loader/padded_conversation.h"
#include "loader/token_ids.h"

namespace sluice::loader {
namespace {

// Columns [column, column + width) of the row hold `ids`, a part of document `record`; its inputs
// (the columns before L) get positions from 0, the document's id, and a loss mask of 1 where the
// next column is the same document's.
void WritePiece(BatchFields* f, size_t row, uint64_t column, uint64_t width, const int32_t* ids,
                uint64_t record) {
  const uint64_t L = static_cast<uint64_t>(f->seq_len);
  int32_t* tokens = static_cast<int32_t*>(f->tokens.data()) + row * (L + 1);
  std::memcpy(tokens + column, ids, width * sizeof(int32_t));
  int32_t* positions = static_cast<int32_t*>(f->positions.data()) + row * L;
  int64_t* doc_ids = static_cast<int64_t*>(f->doc_ids.data()) + row * L;
  uint8_t* mask = static_cast<uint8_t*>(f->loss_mask.data()) + row * L;
  const uint64_t end = column + width;
  for (uint64_t i = column; i < std::min(end, L); ++i) {
    positions[i] = static_cast<int32_t>(i - column);
    doc_ids[i] = static_cast<int64_t>(record);
    mask[i] = i + 1 < end;
  }
}

// Columns [column, column + n) of the row hold conversation `record` rendered (ids, loss): a
// conversation is never split, so it ends inside the row, and the loss mask of input i is the
// template's for its target, the id at i + 1 of the same conversation.
void WriteConversation(BatchFields* f, size_t row, uint64_t column, const RenderedConversation& r,
                       uint64_t record) {
  const uint64_t L = static_cast<uint64_t>(f->seq_len), n = r.ids.size();
  int32_t* tokens = static_cast<int32_t*>(f->tokens.data()) + row * (L + 1);
  std::memcpy(tokens + column, r.ids.data(), n * sizeof(int32_t));
  int32_t* positions = static_cast<int32_t*>(f->positions.data()) + row * L;
  int64_t* doc_ids = static_cast<int64_t*>(f->doc_ids.data()) + row * L;
  uint8_t* mask = static_cast<uint8_t*>(f->loss_mask.data()) + row * L;
  for (uint64_t k = 0; k < n; ++k) {
    positions[column + k] = static_cast<int32_t>(k);
    doc_ids[column + k] = static_cast<int64_t>(record);
    mask[column + k] = k + 1 < n && r.loss[k + 1] != 0;
  }
}

// Columns [from, L + 1) of the row are padding: id 0, one segment of positions from 0, doc id
// -1, no loss.
void WritePadding(BatchFields* f, size_t row, uint64_t from) {
  const uint64_t L = static_cast<uint64_t>(f->seq_len);
  if (from > L) return;
  int32_t* tokens = static_cast<int32_t*>(f->tokens.data()) + row * (L + 1);
  std::fill(tokens + from, tokens + L + 1, 0);
  int32_t* positions = static_cast<int32_t*>(f->positions.data()) + row * L;
  int64_t* doc_ids = static_cast<int64_t*>(f->doc_ids.data()) + row * L;
  uint8_t* mask = static_cast<uint8_t*>(f->loss_mask.data()) + row * L;
  for (uint64_t i = from; i < L; ++i) {
    positions[i] = static_cast<int32_t>(i - from);
    doc_ids[i] = -1;
    mask[i] = 0;
  }
}

class PackedCollator final : public Collator {
 public:
  PackedCollator(const CollatorContext& ctx, std::vector<uint32_t> read_unit, uint32_t units)
      : Collator(ctx), read_unit_(std::move(read_unit)), num_read_units_(units) {}

  Status Plan(const IndexColumns& index, uint64_t epoch, const std::vector<WorldSegment>& earlier,
              EpochPlan* plan) const override {
    const LoaderOptions& o = *ctx_.options;
    if (ctx_.conversation != nullptr)  // the index's tokens are the conversations' costs
      return MakeConversationPlan(index, o.batching, o.packing, o.seed, epoch, earlier, o.rank,
                                  o.world, plan,
                                  ctx_.dataset->mixed() ? &ctx_.dataset->mix() : nullptr);
    if (o.packing.pack_mode == PackMode::kConcat)
      return MakePackedPlan(index, o.batching, o.packing, o.seed, epoch, earlier, o.rank, o.world,
                            plan);
    return MakeFitPlan(index, o.batching, o.packing, o.seed, epoch, earlier, o.rank, o.world,
                       ctx_.dataset->mixed() ? &ctx_.dataset->mix() : nullptr, plan);
  }

  // Packed batches are all [B, L + 1]: their ids are the batch's memory.
  uint64_t MaxTokens(uint32_t) const override { return plan_->seq_len + 1ull; }

  uint32_t OpenBatchCap(int tokens) const override;

  AudioShape BatchAudio(uint32_t j) const override {
    if (ctx_.audio == nullptr) return {};
    const PlannedBatch& pb = plan_->batches[j];
    return ctx_.audio->Shape({plan_->records.data() + pb.first, pb.entries});
  }

  Status OpenRows(uint32_t j, BatchBuffer* b, uint64_t* allocations) const override {
    const PlannedBatch& pb = plan_->batches[j];
    BatchFields& f = b->fields();
    const size_t width = plan_->seq_len + 1;
    f.max_tokens = static_cast<int64_t>(width);
    bool grew = false;
    const size_t columns = pb.rows * plan_->seq_len;
    // Loader::Start reserved every pooled batch (BatchPool::ReservePacked); this only guards it.
    const std::pair<AlignedArray*, size_t> arrays[] = {
        {&f.tokens, pb.rows * width * sizeof(int32_t)},
        {&f.positions, columns * sizeof(int32_t)},
        {&f.doc_ids, columns * sizeof(int64_t)},
        {&f.loss_mask, columns},
        {&f.cu_seqlens, (columns + 1) * sizeof(int32_t)},
        {&f.row_cu_seqlens, pb.rows * width * sizeof(int32_t)}};
    for (const auto& [a, bytes] : arrays) {
      if (!a->Reserve(bytes, &grew))
        return Status::IOError("batch allocator: out of memory for packed batch " +
                               std::to_string(j));
      *allocations += grew;
    }
    f.sequences.resize(pb.rows);
    SLUICE_RETURN_IF_ERROR(OpenAudio(j, b, allocations));
    int32_t* lengths = static_cast<int32_t*>(f.lengths.data());
    int32_t* token_lengths = static_cast<int32_t*>(f.token_lengths.data());
    for (uint32_t row = 0; row < pb.rows; ++row) {
      f.sequences[row] = plan_->sequences[static_cast<uint64_t>(j) * pb.rows + row];
      f.texts[row].clear();
      lengths[row] = 0;
      token_lengths[row] = static_cast<int32_t>(width);
    }
    // Entries are row after row, each row's first is the document of its first token. A fit's
    // row ends in padding after its last entry's columns.
    for (uint64_t e = pb.first, end = pb.first + pb.entries; e < end; ++e) {
      const uint32_t row = plan_->row_of(e, pb);
      if (!plan_->pieces.empty() && (e + 1 == end || plan_->row_of(e + 1, pb) != row)) {
        const PackedPiece& last = plan_->pieces[e];
        WritePadding(&f, row, last.column + last.width);
      }
      if (e > pb.first && plan_->row_of(e - 1, pb) == row) continue;
      const uint64_t r = plan_->records[e];
      f.record_ids[row] = r;
      f.keys[row] = ctx_.dataset->shard(index_->shard_of(r)).key(index_->local_index(r));
    }
    return Status::OK();
  }

  Status Decode(const ReadItem& item, const shards::RecordView& rv, const shards::RecordEntry& re,
                std::string_view shard, DecodeScratch* s, BatchBuffer* b) const override {
    if (ctx_.conversation != nullptr) return DecodeConversationRow(item, rv, re, shard, s, b);
    const int32_t* ids = nullptr;
    uint64_t n = 0;
    SLUICE_RETURN_IF_ERROR(Ids(item, rv, s, &ids, &n));
    if (plan_->pieces.empty()) {
      CopyTokens(item, ids, n, b);
      return Status::OK();
    }
    // A mixture may place a record twice in one row: its read items are then alike, and each
    // writes every one of its pieces in the row (the same bytes; the items of one row and block
    // are decoded in one read step, one after the other).
    const PlannedBatch& pb = plan_->batches[item.batch];
    const auto rows = plan_->entry_rows.begin();
    const uint64_t end = pb.first + pb.entries;
    for (uint64_t e =
             static_cast<uint64_t>(std::lower_bound(rows + pb.first, rows + end, item.row) - rows);
         e < end && plan_->entry_rows[e] == item.row; ++e) {
      if (plan_->records[e] != item.record) continue;
      const PackedPiece& p = plan_->pieces[e];
      WritePiece(&b->fields(), item.row, p.column, p.width, ids + p.first, item.record);
    }
    return Status::OK();
  }

  void CopyRow(BatchBuffer* b, size_t from, size_t to) const override {
    BatchFields& f = b->fields();
    const size_t row_bytes = RowBytes(f);
    char* data = static_cast<char*>(f.tokens.data());
    std::memcpy(data + to * row_bytes, data + from * row_bytes, row_bytes);
    f.sequences[to] = f.sequences[from];
    const size_t L = static_cast<size_t>(f.seq_len);
    auto copy = [&](AlignedArray& a, size_t value_bytes) {
      char* base = static_cast<char*>(a.data());
      std::memcpy(base + to * L * value_bytes, base + from * L * value_bytes, L * value_bytes);
    };
    copy(f.positions, sizeof(int32_t));
    copy(f.doc_ids, sizeof(int64_t));
    copy(f.loss_mask, 1);
    if (f.num_audio > 0) b->audio_source[to] = static_cast<int32_t>(from);
  }

  void ClearRow(BatchBuffer* b, size_t row) const override {
    BatchFields& f = b->fields();
    const size_t row_bytes = RowBytes(f);
    std::memset(static_cast<char*>(f.tokens.data()) + row * row_bytes, 0, row_bytes);
    WritePadding(&f, row, 0);
    if (f.num_audio > 0) b->audio_source[row] = -1;
  }

  // cu_seqlens from the positions (a segment starts at every 0); the inputs that are not
  // padding are the batch's tokens (all L per row for concat).
  Status Finish(BatchBuffer* b, uint64_t* allocations, CollatedCounts* counts) const override {
    BatchFields& f = b->fields();
    for (size_t row = 0; f.num_audio > 0 && row < f.size; ++row)
      if (b->audio_source[row] != static_cast<int32_t>(row)) {
        SLUICE_RETURN_IF_ERROR(RefillAudio(b, allocations));
        break;
      }
    const size_t L = static_cast<size_t>(f.seq_len);
    const int32_t* positions = static_cast<const int32_t*>(f.positions.data());
    const int64_t* doc_ids = static_cast<const int64_t*>(f.doc_ids.data());
    int32_t* cu = static_cast<int32_t*>(f.cu_seqlens.data());
    size_t segments = 0;
    uint64_t real = 0;
    for (size_t row = 0; row < f.size; ++row) {
      int32_t* row_cu = static_cast<int32_t*>(f.row_cu_seqlens.data()) + row * (L + 1);
      size_t k = 0;
      for (size_t i = 0; i < L; ++i) {
        if (positions[row * L + i] == 0) {
          row_cu[k++] = static_cast<int32_t>(i);
          cu[segments++] = static_cast<int32_t>(row * L + i);
        }
        real += doc_ids[row * L + i] >= 0;
      }
      for (; k <= L; ++k) row_cu[k] = static_cast<int32_t>(L);
    }
    cu[segments] = static_cast<int32_t>(f.size * L);
    f.segments = segments;
    // Conversation audio handed out (EpochStats::audio_seconds, frames): every audio turn of each
    // conversation in the rows (a conversation is never split, so each segment is a whole one,
    // repeated rows included), whose samples are its record's duration.
    if (f.num_audio > 0) {
      for (size_t s = 0; s < segments; ++s)
        if (doc_ids[cu[s]] >= 0)
          counts->duration += index_->duration[static_cast<uint64_t>(doc_ids[cu[s]])];
      const int32_t* lengths = static_cast<const int32_t*>(f.audio_lengths.data());
      for (size_t a = 0; a < f.num_audio; ++a) counts->frames += static_cast<uint64_t>(lengths[a]);
    }
    counts->tokens = real;
    counts->padding = f.size * L - real;
    counts->columns = f.size * L;
    return Status::OK();
  }

 private:
  static size_t RowBytes(const BatchFields& f) {
    return static_cast<size_t>(f.max_tokens) * sizeof(int32_t);
  }
  Status Ids(const ReadItem& item, const shards::RecordView& rv, DecodeScratch* s,
             const int32_t** ids, uint64_t* n) const;
  void CopyTokens(const ReadItem& item, const int32_t* ids, uint64_t n, BatchBuffer* b) const;
  Status DecodeConversationRow(const ReadItem& item, const shards::RecordView& rv,
                               const shards::RecordEntry& re, std::string_view shard,
                               DecodeScratch* s, BatchBuffer* b) const;
  Status OpenAudio(uint32_t j, BatchBuffer* b, uint64_t* allocations) const;
  Status RefillAudio(BatchBuffer* b, uint64_t* allocations) const;

  std::vector<uint32_t> read_unit_;  // per record, its (block, shuffle chunk) run
  uint32_t num_read_units_ = 0;
};

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
uint32_t PackedCollator::OpenBatchCap(int tokens) const {
  const uint32_t open_batches = ctx_.options->open_batches;
  if (open_batches == 0) return 0;
  constexpr uint32_t kNone = 0xffffffffu;
  const uint64_t L = plan_->seq_len, T = plan_->stream_tokens;
  std::vector<uint32_t> first(num_read_units_, kNone), last(num_read_units_, 0);
  uint64_t span = 0;
  for (uint32_t j = 0; j < plan_->batches.size(); ++j) {
    const PlannedBatch& pb = plan_->batches[j];
    for (uint64_t e = pb.first; e < pb.first + pb.entries; ++e) {
      const uint64_t r = plan_->records[e];
      const uint64_t a =
          plan_->sequences[static_cast<uint64_t>(j) * pb.rows + plan_->row_of(e, pb)] * L;
      // A document that ends before the row starts is in it through the wrap; a fit's rows past
      // fit_rows repeat the first rows.
      if (plan_->pieces.empty() ? a + L + 1 > T && plan_->record_offset[r] + index_->tokens[r] <= a
                                : a / L >= plan_->fit_rows)
        continue;
      const uint32_t u = read_unit_[r];
      if (first[u] == kNone) first[u] = j;
      last[u] = j;
      span = std::max<uint64_t>(span, last[u] - first[u] + 1);
    }
  }
  const uint64_t cap = span * (static_cast<uint64_t>(tokens) + 1);
  return static_cast<uint32_t>(
      std::max<uint64_t>(open_batches, std::min<uint64_t>(cap, 1u << 16)));
}

// The part of the item's document that falls in its row: the row covers stream tokens
// [a, a + L + 1) and the document [s + m*T, s + n + m*T) for every wrap m of the stream.
void PackedCollator::CopyTokens(const ReadItem& item, const int32_t* ids, uint64_t n,
                                BatchBuffer* b) const {
  BatchFields& f = b->fields();
  const uint64_t L = plan_->seq_len, T = plan_->stream_tokens;
  const uint64_t a = f.sequences[item.row] * L, end = a + L + 1;
  const uint64_t s = plan_->record_offset[item.record];
  for (uint64_t m = a / T; m <= (end - 1) / T; ++m) {
    const uint64_t lo = std::max(a, s + m * T), hi = std::min(end, s + n + m * T);
    if (lo < hi) WritePiece(&f, item.row, lo - a, hi - lo, ids + (lo - s - m * T), item.record);
  }
}

// A conversation's rendering (a mixture's ASR record's: its task conversation) into each of its
// pieces in the row: a mixture may place a record twice in one row, each entry its own piece and
// audio slots (the same bytes; pack_fit.h). Its length must be the cost the plan placed it by,
// computed from the index: Corruption naming the record otherwise.
Status PackedCollator::DecodeConversationRow(const ReadItem& item, const shards::RecordView& rv,
                                             const shards::RecordEntry& re, std::string_view shard,
                                             DecodeScratch* s, BatchBuffer* b) const {
  // Per decode thread, keeping their capacity: no allocation per record once warm.
  thread_local std::vector<shards::ConversationTurn> turns;
  thread_local RenderedConversation rendered;
  thread_local std::string where;
  where.assign(shard);
  where += ": record '";
  where += ctx_.dataset->shard(index_->shard_of(item.record)).key(index_->local_index(item.record));
  where += "'";
  SLUICE_RETURN_IF_ERROR(RenderConversationRecord(*ctx_.conversation, rv, item.record, re.duration,
                                                  where, index_->tokens[item.record], &turns,
                                                  &rendered));
  const PlannedBatch& pb = plan_->batches[item.batch];
  const auto rows = plan_->entry_rows.begin();
  const uint64_t end = pb.first + pb.entries;
  for (uint64_t e =
           static_cast<uint64_t>(std::lower_bound(rows + pb.first, rows + end, item.row) - rows);
       e < end && plan_->entry_rows[e] == item.row; ++e) {
    if (plan_->records[e] != item.record) continue;
    const uint64_t column = plan_->pieces[e].column;
    WriteConversation(&b->fields(), item.row, column, rendered, item.record);
    if (ctx_.audio == nullptr) continue;
    const uint32_t first = b->audio_first[e - pb.first],
                   slots = b->audio_first[e - pb.first + 1] - first;
    if (rendered.spans.size() != slots)
      return Status::Corruption(where + ": " + std::to_string(rendered.spans.size()) +
                                " audio turns, its turn table in the index " +
                                std::to_string(slots));
    SLUICE_RETURN_IF_ERROR(ctx_.audio->Write(rv, turns, rendered, item.row, column, first,
                                             plan_->seed, plan_->epoch, item.record, where, s,
                                             &b->fields()));
  }
  return Status::OK();
}

// Batch j's audio slots: its entries' audio turns one after the other (entries are row after
// row, a row's in column order, so the audio is in row order then span order), in memory that
// Loader::Start reserved for the plan's largest (this only guards it).
Status PackedCollator::OpenAudio(uint32_t j, BatchBuffer* b, uint64_t* allocations) const {
  BatchFields& f = b->fields();
  f.num_audio = 0;
  if (ctx_.audio == nullptr) return Status::OK();
  const PlannedBatch& pb = plan_->batches[j];
  b->audio_first.resize(pb.entries + 1);
  uint32_t slot = 0;
  for (uint64_t e = 0; e < pb.entries; ++e) {
    b->audio_first[e] = slot;
    slot += ctx_.audio->audio_turns(plan_->records[pb.first + e]);
  }
  b->audio_first[pb.entries] = slot;
  b->audio_source.resize(pb.rows);
  for (uint32_t row = 0; row < pb.rows; ++row) b->audio_source[row] = static_cast<int32_t>(row);
  return ctx_.audio->ReserveBatch(BatchAudio(j), "packed batch", j, &f, allocations);
}

// kSkip refilled rows (CopyRow, ClearRow): each row now holds its source row's conversations, so
// it gets that row's audio (a cleared row none), in row order as before. Only after a corrupt
// block.
Status PackedCollator::RefillAudio(BatchBuffer* b, uint64_t* allocations) const {
  BatchFields& f = b->fields();
  const PlannedBatch& pb = plan_->batches[f.index];
  // Each row's first slot as planned: entries are row after row, so the prefix sums of the
  // rows' audio counts.
  std::vector<uint32_t> row_first(f.size + 1, 0);
  for (uint64_t e = 0; e < pb.entries; ++e)
    row_first[plan_->row_of(pb.first + e, pb) + 1] += b->audio_first[e + 1] - b->audio_first[e];
  for (size_t row = 0; row < f.size; ++row) row_first[row + 1] += row_first[row];
  return ConversationAudio::RefillRows(row_first, b->audio_source, &f, allocations);
}

// A packed document's ids: the record's own, or the tokenizer's (cached per thread). Either way
// their count must be the index's, which placed every document in the stream: Corruption for a
// stored field that disagrees (damage the checksum missed cannot happen, but a hand-made index
// can), InvalidArgument for a tokenizer that disagrees with the one that counted, which no
// record of the epoch could survive, so it stops the epoch under either policy.
Status PackedCollator::Ids(const ReadItem& item, const shards::RecordView& rv, DecodeScratch* s,
                           const int32_t** ids, uint64_t* n) const {
  const uint64_t want = index_->tokens[item.record];
  if (const shards::FieldView* f = rv.Find(shards::FieldType::kTokens)) {
    std::span<const int32_t> stored;  // into the block: fields are 8-byte aligned in it
    SLUICE_RETURN_IF_ERROR(StoredTokenIds(*f, "tokens", &stored, s->ids_checked != item.record));
    s->ids_checked = item.record;
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

}  // namespace

Status NewPackedCollator(const CollatorContext& ctx, const IndexColumns& index,
                         const std::string& dir, std::unique_ptr<Collator>* out) {
  const LoaderOptions& options = *ctx.options;
  // Concat places each record by its one offset in the stream, and a mixture repeats records.
  if (ctx.dataset->mixed() && options.packing.pack_mode == PackMode::kConcat)
    return Status::Unsupported(
        "packing (seq_len) of a mixture with pack_mode concat: not implemented. HINT: "
        "pack_mode best_fit or first_fit packs a mixture, or pack one dataset");
  if (ctx.extractor->audio())
    return Status::InvalidArgument("packing (seq_len) is for text datasets; " + dir +
                                   " holds audio");
  if (options.packing.batch_size == 0 || options.packing.chunk_tokens == 0)
    return Status::InvalidArgument("packing: batch_size and chunk_tokens must be at least 1");
  for (uint64_t r = 0; r < index.num_records(); ++r)
    if (index.in_epochs(r) && index.tokens[r] == 0)
      return Status::InvalidArgument(
          dir + ": packing (seq_len) needs each record's token count in the index, and record '" +
          std::string(ctx.dataset->shard(index.shard_of(r)).key(index.local_index(r))) +
          "' has none. HINT: make the dataset with shardify text --tokenizer SPEC (ids stored) "
          "or --tokenizer SPEC --store text (counted, tokenized online)");
  for (size_t s = 0; s < ctx.dataset->size(); ++s)
    if (!ctx.dataset->source(s).manifest().has_field("tokens") && !options.tokenizer)
      return Status::InvalidArgument(
          ctx.dataset->source(s).dir() +
          ": packing needs token ids: the records hold text only and neither "
          "manifest.json nor LoaderOptions::tokenizer names a tokenizer");
  // Read units of OpenBatchCap: the runs of records sharing a block and a shuffle chunk.
  const std::vector<uint64_t> chunks = PackChunks(index, options.packing.chunk_tokens);
  std::vector<uint32_t> read_unit(index.num_records());
  uint32_t unit = 0;
  for (size_t c = 0; c + 1 < chunks.size(); ++c)
    for (uint64_t r = chunks[c]; r < chunks[c + 1]; ++r) {
      if (r > 0 && (r == chunks[c] || index.block_of[r] != index.block_of[r - 1])) ++unit;
      read_unit[r] = unit;
    }
  *out = std::make_unique<PackedCollator>(ctx, std::move(read_unit), unit + 1);
  return Status::OK();
}

}  // namespace sluice::loader
