// The mixed epoch: several datasets (sources.h) blended by weight into one record stream, which
// the sampler (plan.h, steps 2-4) then buckets and splits over ranks like any other. A pure
// function of (index, weights, epoch_records, BatchingOptions, seed, epoch):
//
//  1. Counts: N = epoch_records (0: the sum of the sources' selected records); source i gets
//     n_i = N * w_i / sum(w), rounded by largest remainder (ties to the earlier source), so the
//     counts add up to N exactly and each is within 1 of its exact share.
//  2. Each source's own stream: its blocks shuffled, each block's records in order (plan.h step
//     1 over the source's blocks alone, without the window shuffle), keyed by (seed, epoch,
//     source, pass). Source i contributes the first n_i records of pass 0, pass 1, ...: without
//     replacement until it runs out, then again in a new order. Records of pass >= 1 are
//     repeats, counted per source (EpochPlan::source_repeated).
//  3. Interleave: a sequence holding source label i n_i times, shuffled by (seed, epoch); the
//     k-th label i takes source i's next record. Every prefix of the stream is then a sample
//     without replacement of the labels: in the first k records source i's share has mean
//     n_i / N and standard deviation at most sqrt(p (1 - p) / k) (after step 4, for prefixes
//     that end at a window's end).
//  4. Windows of shuffle_window records of the mixed stream are shuffled (plan.h step 1's last
//     part). After the interleave, not per source: a block's records then stay within about
//     one window of the stream, as for one dataset, where a per-source window, spread by the
//     interleave over (sources) windows, held more batches open than open_batches and made the
//     read schedule read 30% of the blocks twice (two sources, 1 h corpus).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "loader/options.h"
#include "loader/plan.h"

namespace sluice::loader {

// The largest weight a source takes. Weights are relative, so any share is a ratio of two of
// them; a sum of weights this size stays finite and exact enough to split an epoch, where one
// infinite weight made every share NaN and the plan asked for a vector of 2^64 records.
inline constexpr double kMaxMixWeight = 1e12;

// InvalidArgument naming `where` (a --data spec, a source's directory) unless the weight is a
// number in (0, kMaxMixWeight]: not NaN, not infinite, not negative or zero.
Status CheckMixWeight(double weight, const std::string& where);

// Step 1: per source, its records in an epoch of `total` records.
std::vector<uint64_t> MixCounts(const std::vector<double>& weights, uint64_t total);

// The mixed record stream (record ids, a record once per occurrence) and, per source, its
// records and repeats. InvalidArgument naming the source for a weight <= 0 or a source with a
// share but no selected record.
Status MixedRecordStream(const IndexColumns& index, const std::vector<double>& weights,
                         uint64_t epoch_records, const BatchingOptions& options, uint64_t seed,
                         uint64_t epoch, std::vector<uint64_t>* stream,
                         std::vector<uint64_t>* source_records,
                         std::vector<uint64_t>* source_repeated);

// The rank's plan of a mixed epoch (MakeEpochPlanOfStream over MixedRecordStream), with the
// per-source counts filled in.
Status MakeMixedPlan(const IndexColumns& index, const std::vector<double>& weights,
                     uint64_t epoch_records, const BatchingOptions& options, uint64_t seed,
                     uint64_t epoch, const std::vector<WorldSegment>& earlier, int rank, int world,
                     EpochPlan* plan);

}  // namespace sluice::loader
