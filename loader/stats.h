// EpochStats: what one epoch of one rank cost and yielded (sluice-bench epoch prints them).
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "../shards/storage_counters.h"

namespace sluice::loader {

// One source of a mixture in an epoch (Loader::Open(MixOptions)).
struct SourceStats {
  uint64_t records = 0;   // the epoch's records from this source, all ranks, repeats included
  uint64_t repeated = 0;  // of those, repeats: the source ran out and was drawn again
  uint64_t rows = 0;      // rows of this rank's batches handed out so far whose first record is
                          // this source's: a packed row of several sources' records counts once
};

// The records LoaderOptions::filter left out for one reason (a top-level "and" operand of the
// expression), over the whole dataset: the same in every epoch.
struct FilterCount {
  std::string reason;
  uint64_t records = 0;
};

struct EpochStats {
  uint64_t epoch = 0;
  uint64_t start_batch = 0;        // > 0 after a resume
  uint64_t consumed_records = 0;   // records taken at other world sizes before this plan (all
                                   // ranks; elastic resume, resume.h)
  uint64_t batches = 0;            // handed to the consumer
  uint64_t utterances = 0;         // rows in those batches
  uint64_t repeated_records = 0;   // rows repeating a record to equalise ranks (plan.h)
  uint64_t skipped_records = 0;    // rows refilled because their block was corrupt
  uint64_t split_batches = 0;      // batches halved to equalise ranks (all ranks)
  double audio_seconds = 0;        // audio in the rows handed out
  uint64_t frames = 0;             // feature frames in those rows
  uint64_t padded_frames = 0;      // rows * T over those batches
  uint64_t tokens = 0;             // token ids handed out: transcripts' ids, or with packing
                                   // the inputs that are not padding (L per row for concat;
                                   // the +1 target is the next row's first input)
  uint64_t padding_tokens = 0;     // packing: input columns of padding in those batches
  uint64_t input_columns = 0;      // packing: rows x L of those batches
  uint64_t blocks_read = 0;        // blocks the read stage read (records' own blocks)
  uint64_t segment_blocks_read = 0;  // stored recordings: chunk blocks read for segments' audio
                                     // (docs/loader.md, "Stored recordings")
  uint64_t reread_blocks = 0;      // reads of a block already read this epoch (open_batches)
  uint64_t bytes_read = 0;         // compressed bytes read from the shards
  double wall_seconds = 0;         // Start to the end of the epoch as the consumer saw it
  double first_batch_seconds = 0;  // Start to the first batch in the consumer's hands
  double wait_seconds = 0;         // consumer time blocked in Next()
  double read_busy_seconds = 0;    // read stage (pread), one thread
  double decode_busy_seconds = 0;  // decode stage, summed over threads
  double collate_busy_seconds = 0; // collate stage, one thread
  uint64_t pool_batches = 0;       // batch buffers the pool holds
  uint64_t pool_bytes = 0;         // bytes the pool may hold this epoch (features and ids; bound
                                   // by options, plus outlier transcripts over max_padded_tokens)
  uint64_t start_allocations = 0;  // allocator calls in Start (pool growth; 0 once warm)
  uint64_t pool_allocations = 0;   // allocator calls while batches flowed (0: only tokens grow)
  uint64_t max_ready = 0;          // most finished batches queued at once
  uint64_t max_open = 0;           // most batches being filled at once
  uint64_t max_tokens = 0;         // most read steps in flight at once
  uint64_t max_open_bound = 0;     // the plan's bound on max_open (schedule.h)
  int threads = 0;                 // decode threads (LoaderOptions::threads resolved)
  int blocks_in_flight = 0;        // read steps allowed in flight (LoaderOptions::blocks_in_flight
                                   // resolved)
  uint64_t stream_tokens = 0;      // packing: the epoch's token stream, all ranks (pack.h)
  uint64_t consumed_sequences = 0; // packing: sequences (rows) taken at other world sizes before
                                   // this plan (all ranks; elastic resume, pack.h)
  uint64_t wrapped_tokens = 0;     // packing: inputs past the stream's end, repeating its start
                                   // (fits: the inputs of the rows repeated for whole batches)
  // Packing fits (pack_fit.h), the whole epoch on all ranks, from the plan.
  uint64_t fit_rows = 0;             // rows the documents filled (before the repeated ones)
  uint64_t fit_padding = 0;          // their input columns of padding, repeated rows included
  uint64_t split_documents = 0;      // documents longer than L split at row boundaries
  uint64_t truncated_documents = 0;  // too_long truncate: documents cut to L tokens
  uint64_t truncated_tokens = 0;     // their tokens dropped
  uint64_t skipped_documents = 0;    // too_long skip: documents left out
  uint64_t skipped_tokens = 0;       // their tokens
  uint64_t rank_token_spread = 0;    // packing fits, world > 1: the worst step's most minus fewest
                                     // tokens over the ranks (loader/rank_balance.h)
  double rank_token_ratio = 1.0;     // and its most over fewest
  uint64_t filtered_records = 0;     // records LoaderOptions::filter left out (all ranks)
  std::vector<FilterCount> filtered;  // by reason, in the expression's order; empty: no filter
  std::vector<SourceStats> sources;  // a mixture's, in the order of MixOptions::sources; empty
                                     // for one dataset
  shards::StorageCounters storage;   // what the datasets' storage did in the epoch, all sources:
                                     // requests, bytes fetched, retries (remote datasets) and
                                     // block cache hits, misses and bytes; zero for local ones

  // Padded frames (audio) or, for packed batches, input columns that hold no token.
  double padding_waste() const {
    if (padded_frames)
      return 1.0 - static_cast<double>(frames) / static_cast<double>(padded_frames);
    return input_columns ? static_cast<double>(padding_tokens) / static_cast<double>(input_columns)
                         : 0.0;
  }
  nlohmann::json ToJson() const;  // callers include <nlohmann/json.hpp> to use it
};

}  // namespace sluice::loader
