// Document fits: packed rows of whole documents (PackMode first_fit / best_fit), planned from the
// index's token counts alone, as a pure function of (index, BatchingOptions, PackingOptions, seed,
// epoch, rank, world), like the concatenating plan (pack.h) whose steps 1 and 3 it shares.
//
//  1. Stream: the selected records in PackedRecordStream order (pack.h), or a mixture's
//     (MixedRecordStream, mix.h).
//  2. Pieces: a document of n <= L tokens is one piece. A longer one, with split_long, fills
//     floor(n / L) rows of L alone, at row boundaries, and its last n mod L tokens are a piece
//     (split_documents); without, too_long truncates it to a row of its first L tokens
//     (truncated_documents, truncated_tokens) or leaves it out (skipped_documents,
//     skipped_tokens).
//  3. Rows: the stream is cut into windows of fit_window documents; each window's pieces go into
//     rows of L input columns that no other window uses. first_fit: in stream order, each into
//     the first of the window's rows with room, else a new row. best_fit: longest first (stream
//     order among equals), each into the row with the least room that holds it (the earliest
//     among equals), else a new row. Rows are numbered in window order, then order of creation;
//     a row's pieces lie in the order they were placed, from column 0, and the columns after
//     them are padding. R rows in all (EpochPlan::fit_rows).
//  4. Sequences: S = R rounded up to a multiple of batch_size x world; sequence k >= R repeats
//     row (k - R) mod R (fewer than B x world rows, their inputs counted as wrapped_tokens); then
//     the concatenating plan's steps 3-4 (shuffle windows, contiguous runs per rank, the rest of
//     the epoch on another world: PlanSequences, pack.h).
//
// Every token of every document is an input exactly once in rows 0..R-1 (but those too_long
// drops). Rows hold L + 1 ids like every packed batch: inputs row[0..L), targets row[1..L]; a
// piece that ends in column L - 1 of a document that goes on also writes the document's next id
// in column L, so the prediction across the row boundary is kept.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "loader/options.h"
#include "loader/plan.h"

namespace sluice::loader {

// Steps 2-3 over given document lengths (tokens, in stream order): per row + 1 its first piece
// in *pieces (piece_first), and each piece's document (its index in `lengths`), first token
// and length. Exposed for the benchmark, which compares the modes on lengths alone.
struct FitRows {
  std::vector<uint64_t> row_first;  // per row + 1
  std::vector<uint64_t> doc;        // per piece: index into the lengths
  std::vector<uint32_t> first;      // per piece: its first token in the document
  std::vector<uint32_t> length;     // per piece: tokens (inputs)
  uint64_t split_documents = 0, truncated_documents = 0, truncated_tokens = 0,
           skipped_documents = 0, skipped_tokens = 0;
  uint64_t padding = 0;  // input columns of the R rows holding no token
};
void FitDocuments(const std::vector<uint32_t>& lengths, const PackingOptions& packing,
                  FitRows* out);

// The plan: InvalidArgument as StartPackedPlan (pack.h), for fit_window 0, or when too_long
// skip leaves no document. `mix` (nullptr: one dataset): step 1's stream is the mixed epoch's
// (MixedRecordStream, mix.h: a record once per occurrence, repeats when a source runs out), and
// EpochPlan::source_records / source_repeated are its counts.
Status MakeFitPlan(const IndexColumns& index, const BatchingOptions& batching,
                   const PackingOptions& packing, uint64_t seed, uint64_t epoch,
                   const std::vector<WorldSegment>& earlier, int rank, int world,
                   const MixOptions* mix, EpochPlan* plan);

}  // namespace sluice::loader
