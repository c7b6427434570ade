// Collator: how the rows of an epoch's batches are laid out and filled, the one place where the
// two kinds of batch differ:
//  - padded (NewPaddedCollator): a row per record, features and token ids padded to the batch's
//    longest row (ASR);
//  - packed (NewPackedCollator, PackingOptions::seq_len > 0): [B, L + 1] token ids cut from the
//    epoch's token stream, a row fed by every document it overlaps (language models, pack.h).
// The Loader picks one at Open. The epoch pipeline (pipeline.h) keeps the read order, the batch
// order, the counters and the corrupt-row policy, and calls the collator at these points:
//
//   Plan       Loader::Start    the epoch's batches (the rest of it after a change of world size)
//   Bind       Loader::Start    the epoch's index and plan, used by every call below
//   MaxTokens, BatchAudio,
//   OpenBatchCap                what the batch pool and the read schedule are sized for
//   OpenRows   read stage       a batch's per-row fields, before any of its records is decoded
//   Decode     decode stage     one read item's record into its row (threads at once)
//   CopyRow, ClearRow           collate stage, kSkip: the collator's part of a refilled lost row
//   Finish     collate stage    a complete batch made ready for the consumer
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "loader/batch_buffer.h"
#include "loader/conversation_audio.h"
#include "loader/conversation_plan.h"
#include "loader/feature_extractor.h"
#include "loader/options.h"
#include "loader/plan.h"
#include "loader/schedule.h"
#include "loader/sources.h"
#include "shards/dataset.h"
#include "shards/record.h"

namespace sluice::loader {

// What a collator reads, owned by the Loader, which outlives it.
struct CollatorContext {
  const Sources* dataset = nullptr;  // one dataset, or the sources of a mixture
  const FeatureExtractor* extractor = nullptr;
  const LoaderOptions* options = nullptr;  // as resolved by Open (the dataset's tokenizer)
  const ConversationSpec* conversation = nullptr;  // a conversation dataset's template and frames
  const ConversationAudio* audio = nullptr;  // its audio turns' features (none: no audio turns)
};

// What a finished batch adds to EpochStats (the pipeline counts batches, rows and padding).
struct CollatedCounts {
  uint64_t frames = 0;    // real (unpadded) frames
  uint64_t duration = 0;  // samples of audio
  uint64_t tokens = 0;    // token ids handed out (EpochStats::tokens)
  uint64_t padding = 0;   // packed: input columns of padding (EpochStats::padding_tokens)
  uint64_t columns = 0;   // packed: input columns, rows x L (EpochStats::input_columns)
};

class Collator {
 public:
  explicit Collator(const CollatorContext& ctx) : ctx_(ctx) {}
  virtual ~Collator() = default;

  // The batches of `epoch` over `index` (the epoch's lengths) left after the `earlier` stretches
  // at other world sizes (ResumeState::earlier; none: the whole epoch): the plan's own errors.
  virtual Status Plan(const IndexColumns& index, uint64_t epoch,
                      const std::vector<WorldSegment>& earlier, EpochPlan* plan) const = 0;
  // The epoch the calls below serve; both must outlive them (until the next Bind).
  void Bind(const IndexColumns* index, const EpochPlan* plan) {
    index_ = index;
    plan_ = plan;
  }
  // The widest token row batch j can have, from the index's counts (0: unknown or none).
  virtual uint64_t MaxTokens(uint32_t j) const = 0;
  // Batch j's audio (conversation datasets with audio turns; none otherwise), which the pool
  // reserves at Start.
  virtual AudioShape BatchAudio(uint32_t) const { return {}; }
  // The cap on batches open at once (MakeReadSchedule), for the schedule's lag `tokens`.
  virtual uint32_t OpenBatchCap(int tokens) const = 0;

  // Batch j's per-row fields. The pipeline has set its shape (size, frames, dim, dtype) and
  // sized its per-row arrays. IOError when the allocator fails; *allocations counts its calls.
  virtual Status OpenRows(uint32_t j, BatchBuffer* b, uint64_t* allocations) const = 0;
  // Writes the item's record (parsed as `record`, its index entry `entry`, from shard `shard`)
  // into its row of `b`. Corruption: the row is lost (CorruptPolicy decides); InvalidArgument:
  // the epoch stops. Called from several threads at once, for different items.
  virtual Status Decode(const ReadItem& item, const shards::RecordView& record,
                        const shards::RecordEntry& entry, std::string_view shard,
                        DecodeScratch* scratch, BatchBuffer* b) const = 0;
  // kSkip: row `to` (lost) becomes a copy of row `from`, or empty; the pipeline copies or clears
  // the keys and record ids, the collator the rest.
  virtual void CopyRow(BatchBuffer* b, size_t from, size_t to) const = 0;
  virtual void ClearRow(BatchBuffer* b, size_t row) const = 0;
  // Completes a batch whose rows are all in (lost ones refilled). IOError when the allocator
  // fails; *allocations counts its calls.
  virtual Status Finish(BatchBuffer* b, uint64_t* allocations, CollatedCounts* counts) const = 0;

 protected:
  CollatorContext ctx_;
  const IndexColumns* index_ = nullptr;
  const EpochPlan* plan_ = nullptr;
};

std::unique_ptr<Collator> NewPaddedCollator(const CollatorContext& ctx);

// Checks that the dataset can be packed (text, a token count per record of `index`, ids stored
// or a tokenizer in every source): InvalidArgument naming `dir` and the fix; Unsupported for a
// mixture with pack_mode concat.
Status NewPackedCollator(const CollatorContext& ctx, const IndexColumns& index,
                         const std::string& dir, std::unique_ptr<Collator>* out);

// A record tokenized online must give the count the index holds for it (shardify --store text
// counted it), or the plan's lengths (and a packed stream's every later token) are wrong:
// InvalidArgument, which stops the epoch under either corrupt policy.
Status CheckTokenizerCount(size_t got, uint64_t want);

}  // namespace sluice::loader
