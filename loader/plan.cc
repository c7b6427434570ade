#include "loader/plan.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "base/random.h"

namespace sluice::loader {
namespace {

// Salts that keep the block shuffle and the window shuffles on unrelated random streams.
constexpr uint64_t kBlockSalt = 0x626c6f636b730000ull;   // "blocks"
constexpr uint64_t kWindowSalt = 0x77696e646f770000ull;  // "window"

template <typename T>
void Shuffle(T* v, size_t n, Rng* rng) {
  for (size_t i = n; i > 1; --i) {
    const size_t j = static_cast<size_t>(rng->UniformInt(0, static_cast<int64_t>(i) - 1));
    std::swap(v[i - 1], v[j]);
  }
}

}  // namespace

// Step 1: the record stream, over any partition of the records into consecutive units.
std::vector<uint64_t> RecordStreamOfUnits(const std::vector<uint64_t>& unit_first_record,
                                          const std::vector<uint8_t>& selected,
                                          const BatchingOptions& opt, uint64_t seed,
                                          uint64_t epoch) {
  const size_t nunits = unit_first_record.empty() ? 0 : unit_first_record.size() - 1;
  std::vector<uint64_t> units(nunits);
  std::iota(units.begin(), units.end(), uint64_t{0});
  if (opt.shuffle) {
    Rng rng(StreamKey(seed, epoch, kBlockSalt));
    Shuffle(units.data(), units.size(), &rng);
  }
  std::vector<uint64_t> stream;
  stream.reserve(nunits ? unit_first_record.back() : 0);
  for (uint64_t u : units)
    for (uint64_t r = unit_first_record[u]; r < unit_first_record[u + 1]; ++r)
      if (selected.empty() || selected[r]) stream.push_back(r);
  ShuffleWindows(opt, seed, epoch, &stream);
  return stream;
}

void ShuffleWindows(const BatchingOptions& opt, uint64_t seed, uint64_t epoch,
                    std::vector<uint64_t>* stream) {
  if (!opt.shuffle || opt.shuffle_window <= 1) return;
  const size_t w = opt.shuffle_window;
  for (size_t begin = 0, chunk = 0; begin < stream->size(); begin += w, ++chunk) {
    Rng rng(StreamKey(seed, epoch, kWindowSalt + chunk));
    Shuffle(stream->data() + begin, std::min(w, stream->size() - begin), &rng);
  }
}

std::vector<uint64_t> RecordStream(const IndexColumns& index, const BatchingOptions& opt,
                                   uint64_t seed, uint64_t epoch) {
  return RecordStreamOfUnits(index.block_first_record, index.selected, opt, seed, epoch);
}

namespace {

struct Bucket {
  std::vector<uint64_t> records;
  uint64_t total = 0;
  uint64_t tokens = 0;
  uint64_t max_length = 0;
  uint64_t max_tokens = 0;  // the longest row's token ids (index `tokens` column)
  uint64_t first_pos = 0;
};

struct Range {
  uint64_t first = 0;  // into the batcher's records
  uint32_t rows = 0;
  bool repeated = false;  // a batch repeating a record (fewer records than ranks)
};

class Batcher {
 public:
  Batcher(const IndexColumns& index, const BatchingOptions& opt) : index_(index), opt_(opt) {}

  bool Fits(const Bucket& b, uint64_t r) const {
    const uint64_t len = index_.length[r];
    const uint64_t rows = b.records.size() + 1;
    if (opt_.max_batch_size && rows > opt_.max_batch_size) return false;
    if (opt_.max_frames && b.total + len > opt_.max_frames) return false;
    if (opt_.max_tokens && b.tokens + index_.tokens[r] > opt_.max_tokens) return false;
    if (opt_.max_padded_frames && rows * std::max(b.max_length, len) > opt_.max_padded_frames)
      return false;
    if (opt_.max_padded_tokens &&
        rows * std::max<uint64_t>(b.max_tokens, TokensOf(r)) > opt_.max_padded_tokens)
      return false;
    if (opt_.max_padded_sum &&
        rows * (std::max(b.max_length, len) + std::max<uint64_t>(b.max_tokens, TokensOf(r))) >
            opt_.max_padded_sum)
      return false;
    return true;
  }
  uint64_t TokensOf(uint64_t r) const { return r < index_.tokens.size() ? index_.tokens[r] : 0; }
  void Add(Bucket* b, uint64_t r, uint64_t pos) {
    if (b->records.empty()) b->first_pos = pos;
    b->records.push_back(r);
    b->total += index_.length[r];
    if (opt_.max_tokens) b->tokens += index_.tokens[r];  // hand-made indexes may lack the column
    b->max_length = std::max(b->max_length, index_.length[r]);
    b->max_tokens = std::max<uint64_t>(b->max_tokens, TokensOf(r));
  }
  void Emit(Bucket* b) {
    batches_.push_back({records_.size(), static_cast<uint32_t>(b->records.size())});
    records_.insert(records_.end(), b->records.begin(), b->records.end());
    b->records.clear();
    b->total = 0;
    b->tokens = 0;
    b->max_length = 0;
    b->max_tokens = 0;
  }
  std::vector<uint64_t>& records() { return records_; }
  std::vector<Range>& batches() { return batches_; }

 private:
  const IndexColumns& index_;
  const BatchingOptions& opt_;
  std::vector<uint64_t> records_;
  std::vector<Range> batches_;
};

}  // namespace

void BuildIndexColumns(const shards::Dataset& ds,
                       const std::function<uint64_t(const shards::RecordEntry&)>& length_of,
                       IndexColumns* out) {
  std::vector<const shards::ShardReader*> shards;
  for (size_t s = 0; s < ds.num_shards(); ++s) shards.push_back(&ds.shard(s));
  BuildIndexColumns(shards, length_of, out);
}

void BuildIndexColumns(const std::vector<const shards::ShardReader*>& shards,
                       const std::function<uint64_t(const shards::RecordEntry&)>& length_of,
                       IndexColumns* out) {
  *out = IndexColumns();
  out->shard_first_record.push_back(0);
  out->block_first_record.push_back(0);
  for (size_t s = 0; s < shards.size(); ++s) {
    const shards::ShardReader& shard = *shards[s];
    for (size_t b = 0; b < shard.num_blocks(); ++b) {
      const uint32_t g = static_cast<uint32_t>(out->block_shard.size());
      out->block_shard.push_back(static_cast<uint32_t>(s));
      out->block_local.push_back(static_cast<uint32_t>(b));
      for (size_t i = shard.first_record(b); i < shard.first_record(b + 1); ++i) {
        const shards::RecordEntry& e = shard.record(i);
        out->length.push_back(length_of(e));
        out->duration.push_back(e.duration);
        out->tokens.push_back(e.tokens);
        out->block_of.push_back(g);
      }
      out->block_first_record.push_back(out->length.size());
    }
    out->shard_first_record.push_back(out->length.size());
  }
}

namespace {

// Step 3: a batch count that divides by world, every record exactly once. Returns the batches
// split; *repeated counts the records repeated because there are fewer than ranks.
uint64_t SplitForWorld(int world, std::vector<uint64_t>* records, std::vector<Range>* batches,
                       uint64_t* repeated) {
  uint64_t splits = 0;
  auto need = [&] { return (world - batches->size() % world) % world; };
  while (need() > 0) {
    size_t best = batches->size();
    for (size_t i = 0; i < batches->size(); ++i)
      if ((*batches)[i].rows >= 2 &&
          (best == batches->size() || (*batches)[i].rows > (*batches)[best].rows))
        best = i;
    if (best == batches->size()) break;
    const Range whole = (*batches)[best];
    const uint32_t head = (whole.rows + 1) / 2;
    (*batches)[best].rows = head;
    batches->insert(batches->begin() + best + 1, Range{whole.first + head, whole.rows - head});
    splits++;
  }
  // Fewer records than ranks: every batch has one row; repeat them in order.
  const size_t distinct = batches->size();
  for (size_t k = 0; need() > 0; ++k) {
    batches->push_back({records->size(), 1, true});
    records->push_back((*records)[(*batches)[k % distinct].first]);
    ++*repeated;
  }
  return splits;
}

// Step 4 for one earlier stretch: drops the batches its ranks took and the repeat batches
// (their records are in batches of their own). Returns the records dropped that were not
// repeats.
Status DropConsumed(const WorldSegment& seg, uint64_t epoch, std::vector<uint64_t>* records,
                    std::vector<Range>* batches, uint64_t* consumed) {
  if (seg.world < 1)
    return Status::InvalidArgument("resume state of epoch " + std::to_string(epoch) +
                                   ": an earlier world size of " + std::to_string(seg.world));
  uint64_t repeated = 0;
  SplitForWorld(seg.world, records, batches, &repeated);
  const size_t per_rank = batches->size() / seg.world;
  if (seg.batches > per_rank)
    return Status::InvalidArgument(
        "resume state of epoch " + std::to_string(epoch) + ": " + std::to_string(seg.batches) +
        " batches taken at world size " + std::to_string(seg.world) + ", whose ranks had " +
        std::to_string(per_rank) + " each (another dataset, options or seed?)");
  std::vector<Range> left;
  left.reserve(batches->size() - seg.batches * seg.world);
  for (size_t i = 0; i < batches->size(); ++i) {
    const Range& b = (*batches)[i];
    const bool taken = i % per_rank < seg.batches;
    if (taken && !b.repeated) *consumed += b.rows;
    if (!taken && !b.repeated) left.push_back(b);
  }
  *batches = std::move(left);
  return Status::OK();
}

}  // namespace

Status MakeEpochPlan(const IndexColumns& index, const BatchingOptions& opt, uint64_t seed,
                     uint64_t epoch, int rank, int world, EpochPlan* plan) {
  return MakeEpochPlan(index, opt, seed, epoch, {}, rank, world, plan);
}

Status MakeEpochPlan(const IndexColumns& index, const BatchingOptions& opt, uint64_t seed,
                     uint64_t epoch, const std::vector<WorldSegment>& earlier, int rank, int world,
                     EpochPlan* plan) {
  return MakeEpochPlanOfStream(index, opt, RecordStream(index, opt, seed, epoch), seed, epoch,
                               earlier, rank, world, plan);
}

Status MakeEpochPlanOfStream(const IndexColumns& index, const BatchingOptions& opt,
                             const std::vector<uint64_t>& stream, uint64_t seed, uint64_t epoch,
                             const std::vector<WorldSegment>& earlier, int rank, int world,
                             EpochPlan* plan) {
  if (world < 1 || rank < 0 || rank >= world)
    return Status::InvalidArgument("rank " + std::to_string(rank) + " is outside world size " +
                                   std::to_string(world));
  if (stream.empty())
    return Status::InvalidArgument(index.num_records() == 0
                                       ? "the dataset has no records"
                                       : "no record of the dataset is selected");
  *plan = EpochPlan();
  plan->seed = seed;
  plan->epoch = epoch;
  plan->rank = rank;
  plan->world = world;

  // Bucket bounds at length quantiles of the stream's records (for one dataset, the selected
  // records: epoch-independent, a function of the dataset and the selection); bucket_2d, also at
  // token quantiles, each length bucket split by tokens.
  const size_t nb = std::max<uint32_t>(1, opt.num_buckets);
  Batcher batcher(index, opt);
  auto quantiles = [&](auto value_of, std::vector<uint64_t>* bounds) {
    std::vector<uint64_t> sorted;
    sorted.reserve(stream.size());
    for (uint64_t r : stream) sorted.push_back(value_of(r));
    std::sort(sorted.begin(), sorted.end());
    for (size_t k = 1; k < nb; ++k) {
      const uint64_t q = sorted[k * sorted.size() / nb];
      if (bounds->empty() || q > bounds->back()) bounds->push_back(q);
    }
  };
  quantiles([&](uint64_t r) { return index.length[r]; }, &plan->bucket_bounds);
  if (opt.bucket_2d)
    quantiles([&](uint64_t r) { return batcher.TokensOf(r); }, &plan->token_bucket_bounds);
  auto slot = [](const std::vector<uint64_t>& bounds, uint64_t v) {
    return static_cast<size_t>(std::upper_bound(bounds.begin(), bounds.end(), v) - bounds.begin());
  };
  const size_t token_slots = plan->token_bucket_bounds.size() + 1;
  auto bucket_of = [&](uint64_t r) {
    const size_t by_length = slot(plan->bucket_bounds, index.length[r]);
    return opt.bucket_2d
               ? by_length * token_slots + slot(plan->token_bucket_bounds, batcher.TokensOf(r))
               : by_length;
  };

  // Step 2: bucketing walk.
  const uint64_t wait = opt.max_bucket_wait ? opt.max_bucket_wait
                                            : std::max<uint32_t>(opt.shuffle_window, 1);
  std::vector<Bucket> buckets((plan->bucket_bounds.size() + 1) * (opt.bucket_2d ? token_slots : 1));
  for (uint64_t pos = 0; pos < stream.size(); ++pos) {
    const uint64_t r = stream[pos];
    Bucket& b = buckets[bucket_of(r)];
    if (!b.records.empty() && !batcher.Fits(b, r)) batcher.Emit(&b);
    batcher.Add(&b, r, pos);
    for (Bucket& other : buckets)
      if (!other.records.empty() && other.first_pos + wait <= pos) batcher.Emit(&other);
  }
  for (;;) {  // leftovers, oldest first
    Bucket* oldest = nullptr;
    for (Bucket& b : buckets)
      if (!b.records.empty() && (oldest == nullptr || b.first_pos < oldest->first_pos)) oldest = &b;
    if (oldest == nullptr) break;
    batcher.Emit(oldest);
  }

  // Step 4, then step 3: the batches left after the earlier stretches, split for this world.
  std::vector<uint64_t>& records = batcher.records();
  std::vector<Range>& batches = batcher.batches();
  for (const WorldSegment& seg : earlier)
    SLUICE_RETURN_IF_ERROR(DropConsumed(seg, epoch, &records, &batches, &plan->consumed_records));
  plan->split_batches = SplitForWorld(world, &records, &batches, &plan->repeated_records);

  const size_t per_rank = batches.size() / world;
  plan->global_batches = batches.size();
  plan->batches.reserve(per_rank);
  for (size_t i = per_rank * rank; i < per_rank * (rank + 1); ++i) {
    PlannedBatch pb;
    pb.first = plan->records.size();
    pb.rows = batches[i].rows;
    pb.entries = pb.rows;
    pb.repeated = batches[i].repeated ? batches[i].rows : 0;
    for (uint32_t k = 0; k < batches[i].rows; ++k) {
      const uint64_t r = records[batches[i].first + k];
      plan->records.push_back(r);
      pb.max_length = std::max(pb.max_length, index.length[r]);
      pb.total_length += index.length[r];
    }
    plan->length += pb.total_length;
    plan->padded_length += pb.max_length * pb.rows;
    plan->batches.push_back(pb);
  }
  return Status::OK();
}

}  // namespace sluice::loader
