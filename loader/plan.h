// The sampler: an epoch's batches for one rank, computed from the index columns alone (no payload
// is read), as a pure function of (index, BatchingOptions, seed, epoch, rank, world).
//
//  1. Stream: every block of every shard in an order shuffled by (seed, epoch), each block's
//     records in file order (less those IndexColumns::selected leaves out: no rule below sees
//     them), then the stream shuffled in chunks of shuffle_window records. Reads stay mostly
//     sequential: a rank touches blocks in stream order.
//  2. Buckets: boundaries at the length quantiles of the selected records (epoch-independent);
//     with bucket_2d also at their token quantiles, a bucket per (length slot, token slot). The
//     stream is walked once; a record joins its bucket, and a bucket is emitted as a batch when
//     the next record would break a cap (max_frames, max_padded_frames, max_batch_size,
//     max_tokens, max_padded_tokens, max_padded_sum) or when
//     its oldest record is max_bucket_wait records behind the stream. Leftovers are emitted at the
//     end, oldest first. A record longer than a cap gets a batch of its own.
//  3. Ranks: while the batch count does not divide by world, the batch with the most rows (the
//     earliest among equals) is split in two halves; so every record is in exactly one batch of
//     exactly one rank and all ranks have the same count. Only when every batch is down to one
//     record and their count still does not divide by world (fewer records than ranks, or the
//     few records an elastic resume left, step 4) are records repeated, fewer than world, in
//     batches at the end (EpochPlan::repeated_records). Rank r takes the r-th contiguous
//     range of batches, so ranks read mostly different blocks.
//  4. Elastic resume (ResumeState::earlier, resume.h): for each earlier stretch of the epoch at
//     world size W_i whose ranks each took b_i batches, the global batches are split for W_i as
//     in step 3, the first b_i batches of each of the W_i ranks are dropped (consumed) along
//     with repeat batches, and the rest, still in global order, goes on to the next stretch;
//     step 3 then splits what is left for `world`. So the records left are each in exactly one
//     batch of one rank, in the uninterrupted run's global record order; the batches are the
//     uninterrupted run's (at W_1) but for the halves split for later world sizes.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "base/status.h"
#include "loader/options.h"
#include "loader/resume.h"
#include "shards/dataset.h"

namespace sluice::loader {

// Per-record and per-block columns of a dataset, in global numbering: records are numbered
// shard after shard (record id = shard_first_record[shard] + index in shard), blocks likewise.
struct IndexColumns {
  std::vector<uint64_t> length;              // per record: plan units (see BatchingOptions)
  std::vector<uint64_t> duration;            // per record: samples (audio) or 0
  std::vector<uint32_t> tokens;              // per record: token ids (the index column; 0 = none)
  std::vector<uint32_t> block_of;            // per record: global block
  std::vector<uint64_t> block_first_record;  // per block + 1: records of block g are
                                             // [block_first_record[g], block_first_record[g + 1])
  std::vector<uint32_t> block_shard;         // per block: shard index
  std::vector<uint32_t> block_local;         // per block: block index within its shard
  std::vector<uint64_t> shard_first_record;  // per shard + 1
  std::vector<uint8_t> selected;             // per record: 1 if it is in the epochs
                                             // (LoaderOptions::select); empty: every record
  std::vector<uint64_t> source_first_record; // per source + 1 (sources.h; the Loader fills it)
  std::vector<uint8_t> shard_stored;         // per shard: 1 when its records are segments of
                                             // stored recordings (stored_segments.h); empty: none

  size_t num_records() const { return length.size(); }
  bool in_epochs(uint64_t record) const { return selected.empty() || selected[record] != 0; }
  size_t num_blocks() const { return block_shard.size(); }
  uint32_t shard_of(uint64_t record) const { return block_shard[block_of[record]]; }
  bool stored_segments(uint64_t record) const {
    return !shard_stored.empty() && shard_stored[shard_of(record)] != 0;
  }
  uint64_t local_index(uint64_t record) const {
    return record - shard_first_record[shard_of(record)];
  }
};

// `length_of` maps an index entry to its plan length (FeatureExtractor::Length).
void BuildIndexColumns(const shards::Dataset& ds,
                       const std::function<uint64_t(const shards::RecordEntry&)>& length_of,
                       IndexColumns* out);
// The same over any list of shards, numbered in that order.
void BuildIndexColumns(const std::vector<const shards::ShardReader*>& shards,
                       const std::function<uint64_t(const shards::RecordEntry&)>& length_of,
                       IndexColumns* out);

struct PlannedBatch {
  uint64_t first = 0;         // index of its first entry in EpochPlan::records
  uint32_t rows = 0;
  uint32_t entries = 0;       // its entries in EpochPlan::records: one per row, or with packing
                              // one per (document, row) the row's tokens come from
  uint32_t repeated = 0;      // rows repeating a record (see above; almost always 0)
  uint64_t max_length = 0;    // longest row: the padded length T
  uint64_t total_length = 0;  // sum of row lengths
};

// Document fits (PackMode first_fit / best_fit, pack_fit.h): where an entry's slice of its
// document lies in its row of L + 1 ids.
struct PackedPiece {
  uint32_t column = 0;  // its first id's column
  uint32_t width = 0;   // ids: its inputs, plus the document's next id in column L when the
                        // document goes on past the row (so that the last input has a target)
  uint32_t first = 0;   // the document's id at `column` (0 but for the later parts of a split)
};

struct EpochPlan {
  uint64_t seed = 0;
  uint64_t epoch = 0;
  int rank = 0;
  int world = 1;
  std::vector<uint64_t> records;       // record ids of this rank's entries, batch after batch
  std::vector<uint32_t> entry_rows;    // per entry: its row in its batch; empty when entry i of
                                       // a batch is row i (every plan but packing)
  std::vector<PlannedBatch> batches;   // this rank's batches, in the order Next() yields them
  uint64_t global_batches = 0;         // all ranks: batches.size() * world
  uint64_t split_batches = 0;          // batches halved to make the count divide by world
  uint64_t repeated_records = 0;       // all ranks
  uint64_t consumed_records = 0;       // all ranks: records earlier stretches at other world
                                       // sizes took (step 4); 0 without them
  std::vector<uint64_t> source_records;   // mixtures (mix.h), per source: the epoch's records
  std::vector<uint64_t> source_repeated;  // of those, repeats (the source ran out), all ranks
  std::vector<uint64_t> bucket_bounds; // upper length bounds of the buckets but the last
  std::vector<uint64_t> token_bucket_bounds;  // bucket_2d: upper token bounds likewise; bucket
                                              // (i, j) holds lengths in length slot i, tokens
                                              // in token slot j
  uint64_t length = 0;                 // this rank: sum of row lengths
  uint64_t padded_length = 0;          // this rank: sum of rows * max_length

  // Packing only (PackingOptions; pack.h). Global stream offsets are in tokens.
  uint32_t seq_len = 0;                // L (0: not a packed plan)
  std::vector<uint64_t> sequences;     // per row of this rank, batch after batch: sequence k,
                                       // covering stream tokens [k*L, k*L + L + 1) modulo
                                       // stream_tokens
  std::vector<uint64_t> record_offset; // per record (global id): its first token in the stream
  uint64_t stream_tokens = 0;          // T: the epoch's token stream, all ranks
  uint64_t wrapped_tokens = 0;  // input tokens past T (repeats of the stream's start), all ranks
  uint64_t consumed_sequences = 0;     // elastic resume: sequences earlier stretches took (pack.h)
  // Document fits only (pack_fit.h); all ranks.
  std::vector<PackedPiece> pieces;     // per entry (parallel to records); empty for concat
  uint64_t fit_rows = 0;               // R: rows the fit made; sequence k >= R repeats row
                                       // (k - R) mod R, so that every rank has whole batches
  uint64_t fit_padding = 0;            // input columns of padding in the S rows
  uint64_t split_documents = 0;        // documents longer than L split at row boundaries
  uint64_t truncated_documents = 0;    // too_long truncate: documents cut to L tokens
  uint64_t truncated_tokens = 0;       // their tokens dropped
  uint64_t skipped_documents = 0;      // too_long skip: documents left out
  uint64_t skipped_tokens = 0;         // their tokens
  // Document fits on world > 1 ranks (rank_balance.h): the ranks' tokens per step, worst step.
  uint64_t rank_token_spread = 0;  // most minus fewest
  double rank_token_ratio = 1.0;   // most over fewest

  uint32_t row_of(uint64_t entry, const PlannedBatch& b) const {
    return entry_rows.empty() ? static_cast<uint32_t>(entry - b.first) : entry_rows[entry];
  }
  double padding_waste() const {
    return padded_length ? 1.0 - static_cast<double>(length) / padded_length : 0.0;
  }
};

// Step 1 alone: every selected record id once, in the epoch's read order.
std::vector<uint64_t> RecordStream(const IndexColumns& index, const BatchingOptions& options,
                                   uint64_t seed, uint64_t epoch);
// Step 1 over another partition of the records into consecutive runs (unit u holds records
// [unit_first_record[u], unit_first_record[u + 1])): the units shuffled by (seed, epoch), each
// unit's records in order, then the shuffle_window chunks. RecordStream's units are the blocks;
// packing's are token chunks (pack.h), which do not depend on how records fell into blocks.
// Records with selected[r] == 0 are left out (selected empty: none is).
std::vector<uint64_t> RecordStreamOfUnits(const std::vector<uint64_t>& unit_first_record,
                                          const std::vector<uint8_t>& selected,
                                          const BatchingOptions& options, uint64_t seed,
                                          uint64_t epoch);

// Steps 2-4 over a given stream of record ids (a record may occur more than once: mixtures,
// mix.h). InvalidArgument as below, or for an empty stream.
Status MakeEpochPlanOfStream(const IndexColumns& index, const BatchingOptions& options,
                             const std::vector<uint64_t>& stream, uint64_t seed, uint64_t epoch,
                             const std::vector<WorldSegment>& earlier, int rank, int world,
                             EpochPlan* plan);

// Step 1's last part: the stream shuffled in chunks of shuffle_window records, keyed by (seed,
// epoch) (nothing when shuffle is off or the window is 0 or 1).
void ShuffleWindows(const BatchingOptions& options, uint64_t seed, uint64_t epoch,
                    std::vector<uint64_t>* stream);

// InvalidArgument for world < 1, rank outside [0, world) or no selected record.
Status MakeEpochPlan(const IndexColumns& index, const BatchingOptions& options, uint64_t seed,
                     uint64_t epoch, int rank, int world, EpochPlan* plan);
// The rest of the epoch after `earlier` stretches at other world sizes (step 4); with none, the
// plan above. Its batches may be none at all (every record consumed). InvalidArgument as above,
// or for a stretch whose world is < 1 or that took more batches than its ranks had.
Status MakeEpochPlan(const IndexColumns& index, const BatchingOptions& options, uint64_t seed,
                     uint64_t epoch, const std::vector<WorldSegment>& earlier, int rank,
                     int world, EpochPlan* plan);

}  // namespace sluice::loader
