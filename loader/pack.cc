#include "loader/pack.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "base/random.h"

namespace sluice::loader {
namespace {

// Keeps the sequence shuffle on a random stream unrelated to the block and record shuffles.
constexpr uint64_t kSequenceSalt = 0x7365717300000000ull;  // "seqs"

}  // namespace

std::vector<uint64_t> PackChunks(const IndexColumns& index, uint64_t chunk_tokens) {
  std::vector<uint64_t> first{0};
  uint64_t in_chunk = 0;
  for (uint64_t r = 0; r < index.num_records(); ++r) {
    if (index.in_epochs(r)) in_chunk += index.tokens[r];
    if (in_chunk >= chunk_tokens && r + 1 < index.num_records()) {
      first.push_back(r + 1);
      in_chunk = 0;
    }
  }
  first.push_back(index.num_records());
  return first;
}

std::vector<uint64_t> PackedRecordStream(const IndexColumns& index, const BatchingOptions& batching,
                                         const PackingOptions& packing, uint64_t seed,
                                         uint64_t epoch) {
  return RecordStreamOfUnits(PackChunks(index, std::max<uint64_t>(packing.chunk_tokens, 1)),
                             index.selected, batching, seed, epoch);
}

Status StartPackedPlan(const IndexColumns& index, const PackingOptions& packing, uint64_t seed,
                       uint64_t epoch, int rank, int world, EpochPlan* plan) {
  if (world < 1 || rank < 0 || rank >= world)
    return Status::InvalidArgument("rank " + std::to_string(rank) + " is outside world size " +
                                   std::to_string(world));
  if (packing.seq_len == 0 || packing.batch_size == 0 || packing.chunk_tokens == 0)
    return Status::InvalidArgument(
        "packing: seq_len, batch_size and chunk_tokens must be at least 1");
  if (index.num_records() == 0) return Status::InvalidArgument("the dataset has no records");
  for (uint64_t r = 0; r < index.num_records(); ++r)
    if (index.in_epochs(r) && index.tokens[r] == 0)
      return Status::InvalidArgument(
          "packing (seq_len) needs token counts in the index: record " + std::to_string(r) +
          " has none (make the dataset with shardify text --tokenizer ...)");
  // The previous epoch's plan gives its buffers (cleared): a fresh plan of several MB per epoch
  // costs page faults in Start, which is serial time of every epoch.
  {
    EpochPlan fresh;
    fresh.records = std::move(plan->records);
    fresh.entry_rows = std::move(plan->entry_rows);
    fresh.batches = std::move(plan->batches);
    fresh.sequences = std::move(plan->sequences);
    fresh.record_offset = std::move(plan->record_offset);
    fresh.pieces = std::move(plan->pieces);
    fresh.records.clear();
    fresh.entry_rows.clear();
    fresh.batches.clear();
    fresh.sequences.clear();
    fresh.record_offset.clear();
    fresh.pieces.clear();
    *plan = std::move(fresh);
  }
  plan->seed = seed;
  plan->epoch = epoch;
  plan->rank = rank;
  plan->world = world;
  plan->seq_len = packing.seq_len;
  return Status::OK();
}

void RankSequences(uint64_t S, uint64_t first, uint64_t count, const BatchingOptions& batching,
                   const PackingOptions& packing, uint64_t seed, uint64_t epoch,
                   std::vector<uint64_t>* out) {
  // Each window is shuffled on its own stream, so only the windows overlapping the range are
  // computed.
  const uint64_t w = (batching.shuffle && packing.shuffle_window > 1) ? packing.shuffle_window : 1;
  out->resize(count);
  std::vector<uint64_t> window;
  for (uint64_t start = first / w * w; start < first + count; start += w) {
    const uint64_t size = std::min(w, S - start);
    window.resize(size);
    std::iota(window.begin(), window.end(), start);
    if (w > 1) {
      Rng rng(StreamKey(seed, epoch, kSequenceSalt + start / w));
      for (uint64_t i = size; i > 1; --i)
        std::swap(window[i - 1],
                  window[static_cast<size_t>(rng.UniformInt(0, static_cast<int64_t>(i) - 1))]);
    }
    for (uint64_t i = 0; i < size; ++i)
      if (start + i >= first && start + i < first + count) (*out)[start + i - first] = window[i];
  }
}

Status PlanSequences(uint64_t real, const std::vector<WorldSegment>& earlier, uint64_t B, int rank,
                     int world, const BatchingOptions& batching, const PackingOptions& packing,
                     uint64_t seed, uint64_t epoch, PackedSequences* out) {
  auto round_up = [&](uint64_t n, int w) {
    const uint64_t per = B * static_cast<uint64_t>(w);
    return std::max<uint64_t>(1, (n + per - 1) / per) * per;
  };
  out->rank.clear();
  out->global.clear();
  out->consumed = 0;
  if (earlier.empty()) {  // only the windows of this rank's run are shuffled
    out->S = round_up(real, world);
    out->global_batches = out->S / B;
    const uint64_t count = out->global_batches / world * B;
    RankSequences(out->S, count * rank, count, batching, packing, seed, epoch, &out->rank);
    return Status::OK();
  }
  for (const WorldSegment& w : earlier)
    if (w.world < 1)
      return Status::InvalidArgument("resume: an earlier stretch of world size " +
                                     std::to_string(w.world));
  const uint64_t S1 = round_up(real, earlier.front().world);
  std::vector<uint64_t> list, rest;
  RankSequences(S1, 0, S1, batching, packing, seed, epoch, &list);
  uint64_t next_repeat = S1;
  auto pad = [&](int w) {
    const uint64_t want = list.empty() ? 0 : round_up(list.size(), w);
    while (list.size() < want) list.push_back(next_repeat++);
  };
  for (const WorldSegment& w : earlier) {
    pad(w.world);
    const uint64_t per = list.size() / (B * w.world);  // batches per rank
    if (w.batches > per)
      return Status::InvalidArgument(
          "resume: an earlier stretch at world size " + std::to_string(w.world) + " took " +
          std::to_string(w.batches) + " packed batches per rank, of " + std::to_string(per));
    rest.clear();
    for (uint64_t q = 0; q < static_cast<uint64_t>(w.world); ++q)
      for (uint64_t i = (q * per + w.batches) * B; i < (q + 1) * per * B; ++i)
        if (list[i] < real) rest.push_back(list[i]);
    list.swap(rest);
  }
  out->consumed = real - list.size();
  pad(world);
  out->global = list;
  out->global_batches = list.size() / B;
  const uint64_t count = out->global_batches / world * B;
  out->rank.assign(list.begin() + count * rank, list.begin() + count * (rank + 1));
  return Status::OK();
}

PlannedBatch NewPackedBatch(const EpochPlan& plan, uint64_t B, uint32_t L) {
  PlannedBatch pb;
  pb.first = plan.records.size();
  pb.rows = static_cast<uint32_t>(B);
  pb.max_length = L + 1;
  pb.total_length = B * (L + 1);
  return pb;
}

Status MakePackedPlan(const IndexColumns& index, const BatchingOptions& batching,
                      const PackingOptions& packing, uint64_t seed, uint64_t epoch,
                      const std::vector<WorldSegment>& earlier, int rank, int world,
                      EpochPlan* plan) {
  SLUICE_RETURN_IF_ERROR(StartPackedPlan(index, packing, seed, epoch, rank, world, plan));
  // Concat's rows are all full: there is nothing to deal, and an option that does nothing is
  // refused rather than ignored.
  if (packing.balance_ranks)
    return Status::InvalidArgument(
        "packing: balance_ranks deals rows of whole documents (pack_mode first_fit or best_fit); "
        "concat's rows all hold seq_len tokens. HINT: --pack-mode best_fit, or --balance-ranks "
        "false");
  const uint64_t L = packing.seq_len, B = packing.batch_size;

  // Step 1: the stream and each record's first token in it.
  const std::vector<uint64_t> stream = PackedRecordStream(index, batching, packing, seed, epoch);
  const size_t n = stream.size();
  if (n == 0) return Status::InvalidArgument("no record of the dataset is selected");
  std::vector<uint64_t> prefix(n + 1, 0);  // prefix[p]: first token of stream position p
  plan->record_offset.assign(index.num_records(), 0);
  for (size_t p = 0; p < n; ++p) {
    plan->record_offset[stream[p]] = prefix[p];
    prefix[p + 1] = prefix[p] + index.tokens[stream[p]];
  }
  const uint64_t T = prefix[n];
  plan->stream_tokens = T;

  // Step 2: sequence count, whole batches on every rank.
  // Steps 3-4: this rank's sequences, of the rest of the epoch after `earlier`.
  const uint64_t real = (T + L - 1) / L;
  PackedSequences ps;
  SLUICE_RETURN_IF_ERROR(
      PlanSequences(real, earlier, B, rank, world, batching, packing, seed, epoch, &ps));
  plan->sequences = std::move(ps.rank);
  plan->global_batches = ps.global_batches;
  const uint64_t per_rank = ps.global_batches / world;
  const uint64_t count = per_rank * B;
  if (earlier.empty()) {
    plan->wrapped_tokens = ps.S * L - T;
  } else {  // the repeats the last padding added, each a sequence of L inputs
    for (uint64_t k : ps.global) plan->wrapped_tokens += k >= real ? L : 0;
    plan->consumed_sequences = ps.consumed;
  }

  // Entries: for each row, the documents its L + 1 tokens come from, in stream order (the first
  // is the document holding the row's first token: the row's key).
  plan->batches.reserve(per_rank);
  // A row's entries are its first document and one per document starting inside it: about
  // count + n / world in all.
  plan->records.reserve(count + n / world + count / 8 + 16);
  plan->entry_rows.reserve(plan->records.capacity());
  std::vector<uint64_t> row_records;
  for (uint64_t j = 0; j < per_rank; ++j) {
    PlannedBatch pb = NewPackedBatch(*plan, B, L);
    for (uint32_t row = 0; row < B; ++row) {
      const uint64_t a = plan->sequences[j * B + row] * L, end = a + L + 1;
      row_records.clear();
      bool wrapped = false;
      // One search for the document holding the row's first token, then the next documents.
      size_t p = static_cast<size_t>(
          std::upper_bound(prefix.begin(), prefix.end(), a % T) - prefix.begin() - 1);
      for (uint64_t v = a; v < end;) {
        const uint64_t r = stream[p];
        // After the row wraps past the stream's end it can meet a document again when L + 1
        // exceeds the stream (tiny datasets): one entry per (document, row), which the decode
        // stage fills with every occurrence.
        if (!wrapped || std::find(row_records.begin(), row_records.end(), r) == row_records.end())
          row_records.push_back(r);
        v = v / T * T + prefix[p + 1];  // the end of this document
        if (++p == n) {
          p = 0;
          wrapped = true;
        }
      }
      for (uint64_t r : row_records) {
        plan->records.push_back(r);
        plan->entry_rows.push_back(row);
      }
    }
    pb.entries = static_cast<uint32_t>(plan->records.size() - pb.first);
    plan->length += pb.total_length;
    plan->padded_length += pb.total_length;
    plan->batches.push_back(pb);
  }
  return Status::OK();
}

}  // namespace sluice::loader
