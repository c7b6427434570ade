// The packing sampler: an epoch's fixed-length language-model sequences for one rank, computed
// from the index's token counts alone (no payload is read), as a pure function of (index,
// BatchingOptions, PackingOptions, seed, epoch, rank, world). See PackingOptions (options.h).
//
//  1. Stream: the (selected) records in PackedRecordStream order (token chunks shuffled by (seed,
//  epoch),
//     then windows of shuffle_window records), each contributing its ids (stored, or made online
//     by the tokenizer), end-of-document id included. A prefix sum of the index's token counts
//     gives every record's first token in the stream (T tokens). Chunks, not blocks: the order
//     depends on the records' token counts only, so a dataset storing ids and one storing text
//     (blocks of different records) give the same sequences.
//  2. Sequences: k = 0 .. S-1 with S = ceil(T / L) rounded up to a multiple of batch_size x world;
//     sequence k covers stream tokens [k*L, k*L + L + 1), read modulo T. Inputs [k*L, k*L + L)
//     tile [0, S*L): every token is an input exactly once, and the S*L - T tokens past T (the
//     wrapped_tokens, fewer than L x batch_size x world) repeat the stream's beginning.
//  3. Order: the sequences shuffled in windows of packing.shuffle_window, keyed by (seed, epoch);
//     consecutive runs of batch_size make the global batches, and rank r takes the r-th contiguous
//     run of S / (batch_size x world) batches, so all ranks have the same count of full batches.
//
// Each row becomes entries (document, row) in EpochPlan::records / entry_rows, so the read
// schedule and the pipeline serve it like any other batch: a block is read once for every row of
// the batches it feeds, and resuming at batch N recomputes this plan (O(records), no payload) and
// schedules only the blocks of batches N.. .
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "loader/options.h"
#include "loader/plan.h"

namespace sluice::loader {

// The shuffle units of packing: runs of consecutive records (dataset order), each closed once it
// holds at least chunk_tokens tokens (index counts of the selected records). Returns per chunk + 1
// its first record.
std::vector<uint64_t> PackChunks(const IndexColumns& index, uint64_t chunk_tokens);

// Step 1 alone: every selected record once, in the packed epoch's stream order.
std::vector<uint64_t> PackedRecordStream(const IndexColumns& index, const BatchingOptions& batching,
                                         const PackingOptions& packing, uint64_t seed,
                                         uint64_t epoch);

// What every packed plan starts with: InvalidArgument for world < 1, rank outside [0, world),
// seq_len, batch_size or chunk_tokens 0, no record, or a selected record without a token count;
// else *plan is emptied (keeping its buffers) and given (seed, epoch, rank, world, seq_len).
Status StartPackedPlan(const IndexColumns& index, const PackingOptions& packing, uint64_t seed,
                       uint64_t epoch, int rank, int world, EpochPlan* plan);

// Step 3 for any S sequences: positions [first, first + count) of their shuffled order, keyed by
// (seed, epoch), into *out.
void RankSequences(uint64_t S, uint64_t first, uint64_t count, const BatchingOptions& batching,
                   const PackingOptions& packing, uint64_t seed, uint64_t epoch,
                   std::vector<uint64_t>* out);

// Steps 3-4 for `real` sequences (concat: ceil(T / L); the fits: R rows) and the rest of the
// epoch after `earlier` stretches at other world sizes (ResumeState::earlier; none: the whole
// epoch). Without any, the global list is the shuffled order of S = real rounded up to a multiple
// of B x world, sequences k >= real repeating (concat: the stream read on modulo T; fits: rows
// again). With them, as the padded plan's step 4 (plan.h): the list of the first stretch's world
// W_1 is split into its W_1 contiguous runs, each run's first b_1 batches are dropped (consumed)
// and so are the repeats left; the rest, in global order, goes on to the next stretch, padded with
// new repeats (ids from the first list's S on) to whole batches of that world, and so on, then for
// `world`. So every sequence k < real is in exactly one consumed or left batch, and every rank
// gets the same count. InvalidArgument for a stretch whose world is < 1 or that took more batches
// than its ranks had.
struct PackedSequences {
  std::vector<uint64_t> rank;    // this rank's sequences, batch after batch
  uint64_t global_batches = 0;   // all ranks: rank.size() / B x world
  uint64_t consumed = 0;         // real sequences the earlier stretches took
  std::vector<uint64_t> global;  // with `earlier`: the final global list (rank's run included)
  uint64_t S = 0;                // without: the global list's length (it is 0 .. S - 1 shuffled)
};
Status PlanSequences(uint64_t real, const std::vector<WorldSegment>& earlier, uint64_t B, int rank,
                     int world, const BatchingOptions& batching, const PackingOptions& packing,
                     uint64_t seed, uint64_t epoch, PackedSequences* out);

// A packed batch of B rows of L + 1 tokens whose entries start at the plan's next record.
PlannedBatch NewPackedBatch(const EpochPlan& plan, uint64_t B, uint32_t L);

// PackMode::kConcat's plan. InvalidArgument for world < 1, rank outside [0, world), seq_len,
// batch_size or chunk_tokens 0, no selected record, a selected record without a token count in
// the index (shardify text --tokenizer), or balance_ranks (its rows are all full).
Status MakePackedPlan(const IndexColumns& index, const BatchingOptions& batching,
                      const PackingOptions& packing, uint64_t seed, uint64_t epoch,
                      const std::vector<WorldSegment>& earlier, int rank, int world,
                      EpochPlan* plan);

}  // namespace sluice::loader
