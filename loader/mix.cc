#include "loader/mix.h"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <string>

#include "base/random.h"

namespace sluice::loader {
namespace {

// Keeps the sources' streams and the interleave on random streams unrelated to the plain
// epoch's (plan.cc's salts) and to each other.
constexpr uint64_t kSourceSalt = 0x6d69782d73726300ull;      // "mix-src"
constexpr uint64_t kInterleaveSalt = 0x6d69782d696c7600ull;  // "mix-ilv"

}  // namespace

Status CheckMixWeight(double weight, const std::string& where) {
  if (weight > 0 && weight <= kMaxMixWeight) return Status::OK();  // false for NaN too
  char text[64];
  std::snprintf(text, sizeof text, "%g", weight);
  return Status::InvalidArgument(where + ": the weight " + text +
                                 " is out of range: a mixture weight is a number > 0 and at "
                                 "most 1e12 (weights are relative: only their ratios matter)");
}

std::vector<uint64_t> MixCounts(const std::vector<double>& weights, uint64_t total) {
  const double sum = std::accumulate(weights.begin(), weights.end(), 0.0);
  std::vector<uint64_t> counts(weights.size(), 0);
  std::vector<std::pair<double, size_t>> remainders;  // (fraction left, source)
  uint64_t given = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    const double exact = static_cast<double>(total) * weights[i] / sum;
    counts[i] = static_cast<uint64_t>(exact);
    given += counts[i];
    remainders.push_back({exact - static_cast<double>(counts[i]), i});
  }
  // Largest remainders first; equal ones to the earlier source (a stable order).
  std::stable_sort(remainders.begin(), remainders.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t k = 0; given < total; k = (k + 1) % remainders.size(), ++given)
    counts[remainders[k].second]++;
  return counts;
}

Status MixedRecordStream(const IndexColumns& index, const std::vector<double>& weights,
                         uint64_t epoch_records, const BatchingOptions& opt, uint64_t seed,
                         uint64_t epoch, std::vector<uint64_t>* stream,
                         std::vector<uint64_t>* source_records,
                         std::vector<uint64_t>* source_repeated) {
  const size_t ns = weights.size();
  if (index.source_first_record.size() != ns + 1)
    return Status::InvalidArgument("mixture: " + std::to_string(ns) + " weights for " +
                                   std::to_string(index.source_first_record.size() - 1) +
                                   " sources");
  // Each source's blocks as units over global record ids (blocks never straddle sources).
  std::vector<std::vector<uint64_t>> units(ns);
  std::vector<uint64_t> selected(ns, 0);
  for (size_t g = 0, s = 0; g < index.num_blocks(); ++g) {
    const uint64_t first = index.block_first_record[g];
    while (s + 1 < ns && first >= index.source_first_record[s + 1]) ++s;
    if (units[s].empty()) units[s].push_back(first);
    units[s].push_back(index.block_first_record[g + 1]);
  }
  for (size_t s = 0; s < ns; ++s) {
    SLUICE_RETURN_IF_ERROR(CheckMixWeight(weights[s], "mixture: source " + std::to_string(s)));
    for (uint64_t r = index.source_first_record[s]; r < index.source_first_record[s + 1]; ++r)
      selected[s] += index.in_epochs(r);
  }
  const uint64_t total = epoch_records
                             ? epoch_records
                             : std::accumulate(selected.begin(), selected.end(), uint64_t{0});
  const std::vector<uint64_t> counts = MixCounts(weights, total);

  // Step 2: each source's records, pass after pass; no window shuffle yet (step 4).
  BatchingOptions blocks_only = opt;
  blocks_only.shuffle_window = 0;
  std::vector<std::vector<uint64_t>> taken(ns);
  source_records->assign(ns, 0);
  source_repeated->assign(ns, 0);
  for (size_t s = 0; s < ns; ++s) {
    if (counts[s] == 0) continue;
    if (selected[s] == 0)
      return Status::InvalidArgument("mixture: source " + std::to_string(s) + " has a share of " +
                                     std::to_string(counts[s]) + " records but no selected record");
    taken[s].reserve(counts[s]);
    for (uint64_t pass = 0; taken[s].size() < counts[s]; ++pass) {
      const uint64_t key = StreamKey(seed, kSourceSalt + s, pass);
      const std::vector<uint64_t> one =
          RecordStreamOfUnits(units[s], index.selected, blocks_only, key, epoch);
      const size_t want = std::min<size_t>(one.size(), counts[s] - taken[s].size());
      taken[s].insert(taken[s].end(), one.begin(), one.begin() + want);
      if (pass > 0) (*source_repeated)[s] += want;
    }
    (*source_records)[s] = counts[s];
  }

  // Step 3: interleave by a shuffled sequence of labels.
  std::vector<uint32_t> labels;
  labels.reserve(total);
  for (size_t s = 0; s < ns; ++s) labels.insert(labels.end(), counts[s], static_cast<uint32_t>(s));
  Rng rng(StreamKey(seed, epoch, kInterleaveSalt));
  for (size_t i = labels.size(); i > 1; --i)
    std::swap(labels[i - 1],
              labels[static_cast<size_t>(rng.UniformInt(0, static_cast<int64_t>(i) - 1))]);
  std::vector<size_t> next(ns, 0);
  stream->clear();
  stream->reserve(total);
  for (uint32_t s : labels) stream->push_back(taken[s][next[s]++]);
  // Step 4: the window shuffle, over the mixed stream.
  ShuffleWindows(opt, StreamKey(seed, epoch, kInterleaveSalt), epoch, stream);
  return Status::OK();
}

Status MakeMixedPlan(const IndexColumns& index, const std::vector<double>& weights,
                     uint64_t epoch_records, const BatchingOptions& opt, uint64_t seed,
                     uint64_t epoch, const std::vector<WorldSegment>& earlier, int rank, int world,
                     EpochPlan* plan) {
  std::vector<uint64_t> stream, records, repeated;
  SLUICE_RETURN_IF_ERROR(MixedRecordStream(index, weights, epoch_records, opt, seed, epoch, &stream,
                                           &records, &repeated));
  SLUICE_RETURN_IF_ERROR(
      MakeEpochPlanOfStream(index, opt, stream, seed, epoch, earlier, rank, world, plan));
  plan->source_records = std::move(records);
  plan->source_repeated = std::move(repeated);
  return Status::OK();
}

}  // namespace sluice::loader
