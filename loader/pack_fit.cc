#include "loader/pack_fit.h"

#include <algorithm>
#include <numeric>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "loader/mix.h"
#include "loader/pack.h"
#include "loader/rank_balance.h"

namespace sluice::loader {
namespace {

// A piece of a document waiting for its row within one window.
struct Piece {
  uint64_t doc = 0;
  uint32_t first = 0;
  uint32_t length = 0;
};

// First fit in O(log rows): the leftmost row whose room holds a piece, over a max-tree of the
// rooms (rows not yet made have room 0, and every piece has at least one token).
class FirstFitRows {
 public:
  explicit FirstFitRows(size_t max_rows) {
    while (size_ < max_rows) size_ *= 2;
    tree_.assign(2 * size_, 0);
  }
  // The row taking `length` tokens (a new one, room `capacity`, when none has room).
  uint32_t Place(uint32_t length, uint32_t capacity) {
    uint32_t row;
    if (tree_[1] >= length) {
      size_t i = 1;
      while (i < size_) i = tree_[2 * i] >= length ? 2 * i : 2 * i + 1;
      row = static_cast<uint32_t>(i - size_);
    } else {
      row = rows_++;
      Set(row, capacity);
    }
    Set(row, tree_[size_ + row] - length);
    return row;
  }
  uint32_t rows() const { return rows_; }

 private:
  void Set(size_t row, uint32_t room) {
    size_t i = size_ + row;
    tree_[i] = room;
    for (i /= 2; i >= 1; i /= 2) tree_[i] = std::max(tree_[2 * i], tree_[2 * i + 1]);
  }
  size_t size_ = 1;
  uint32_t rows_ = 0;
  std::vector<uint32_t> tree_;
};

// Best fit: the row with the least room that holds a piece, the earliest among equals.
class BestFitRows {
 public:
  explicit BestFitRows(size_t) {}
  uint32_t Place(uint32_t length, uint32_t capacity) {
    auto it = rooms_.lower_bound({length, 0});
    uint32_t row, room;
    if (it == rooms_.end()) {
      row = rows_++;
      room = capacity;
    } else {
      row = it->second;
      room = it->first;
      rooms_.erase(it);
    }
    if (room > length) rooms_.insert({room - length, row});
    return row;
  }
  uint32_t rows() const { return rows_; }

 private:
  std::set<std::pair<uint32_t, uint32_t>> rooms_;  // (room, row) of the rows with room
  uint32_t rows_ = 0;
};

// Places one window's pieces into new rows of `out`.
template <class Rows>
void FitWindow(std::vector<Piece>* pieces, uint32_t L, bool decreasing, FitRows* out) {
  if (decreasing)
    std::stable_sort(pieces->begin(), pieces->end(),
                     [](const Piece& a, const Piece& b) { return a.length > b.length; });
  Rows rows(pieces->size());
  std::vector<std::pair<uint32_t, uint32_t>> placed;  // (row, piece), in order of placement
  placed.reserve(pieces->size());
  for (uint32_t p = 0; p < pieces->size(); ++p)
    placed.push_back({rows.Place((*pieces)[p].length, L), p});
  std::stable_sort(placed.begin(), placed.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<uint32_t> used(rows.rows(), 0), count(rows.rows(), 0);
  for (const auto& [row, p] : placed) {
    const Piece& piece = (*pieces)[p];
    out->doc.push_back(piece.doc);
    out->first.push_back(piece.first);
    out->length.push_back(piece.length);
    used[row] += piece.length;
    count[row]++;
  }
  for (uint32_t row = 0; row < rows.rows(); ++row) {
    out->row_first.push_back(out->row_first.back() + count[row]);
    out->padding += L - used[row];
  }
  pieces->clear();
}

// Which mode is packing.pack_mode, as FirstFitRows / BestFitRows.
void FitWindowOf(const PackingOptions& packing, std::vector<Piece>* pieces, FitRows* out) {
  if (packing.pack_mode == PackMode::kFirstFit)
    FitWindow<FirstFitRows>(pieces, packing.seq_len, false, out);
  else FitWindow<BestFitRows>(pieces, packing.seq_len, true, out);
}

}  // namespace

void FitDocuments(const std::vector<uint32_t>& lengths, const PackingOptions& packing,
                  FitRows* out) {
  *out = FitRows();
  out->row_first.push_back(0);
  const uint32_t L = packing.seq_len;
  const size_t window = std::max<uint32_t>(packing.fit_window, 1);
  std::vector<Piece> pieces;
  for (size_t d = 0; d < lengths.size(); ++d) {
    const uint32_t n = lengths[d];
    if (n <= L) {
      pieces.push_back({d, 0, n});
    } else if (packing.split_long) {
      out->split_documents++;
      for (uint32_t first = 0; first < n; first += L)
        pieces.push_back({d, first, std::min(L, n - first)});
    } else if (packing.too_long == TooLong::kTruncate) {
      out->truncated_documents++;
      out->truncated_tokens += n - L;
      pieces.push_back({d, 0, L});
    } else {
      out->skipped_documents++;
      out->skipped_tokens += n;
    }
    if ((d + 1) % window == 0 || d + 1 == lengths.size()) FitWindowOf(packing, &pieces, out);
  }
}

namespace {

// The fit's counts into *plan, with the padding and repeats of the rows the sequences take (the
// whole epoch's, or with earlier stretches those left).
void CountFit(const FitRows& fit, const PackedSequences& ps, bool whole_epoch, uint32_t L,
              EpochPlan* plan) {
  const uint64_t R = fit.row_first.size() - 1;
  auto row_tokens = [&](uint64_t row) {
    uint64_t used = 0;
    for (uint64_t p = fit.row_first[row]; p < fit.row_first[row + 1]; ++p) used += fit.length[p];
    return used;
  };
  plan->fit_rows = R;
  plan->split_documents = fit.split_documents;
  plan->truncated_documents = fit.truncated_documents;
  plan->truncated_tokens = fit.truncated_tokens;
  plan->skipped_documents = fit.skipped_documents;
  plan->skipped_tokens = fit.skipped_tokens;
  plan->fit_padding = fit.padding;
  for (uint64_t p = 0; p < fit.length.size(); ++p) plan->stream_tokens += fit.length[p];
  auto add_repeat = [&](uint64_t k) {
    const uint64_t used = row_tokens((k - R) % R);
    plan->wrapped_tokens += used;
    plan->fit_padding += L - used;
  };
  if (whole_epoch) {
    for (uint64_t k = R; k < ps.S; ++k) add_repeat(k);
    return;
  }
  plan->fit_padding = 0;  // the padding and repeats of the rows left
  for (uint64_t k : ps.global) {
    if (k >= R) {
      add_repeat(k);
    } else {
      plan->fit_padding += L - row_tokens(k);
    }
  }
  plan->consumed_sequences = ps.consumed;
}

// The entries of this rank's per_rank batches: each row's pieces in column order; the row's key
// is its first document.
void AddFitEntries(const FitRows& fit, const std::vector<uint64_t>& stream,
                   const std::vector<uint32_t>& lengths, uint64_t B, uint32_t L,
                   uint64_t per_rank, EpochPlan* plan) {
  const uint64_t R = fit.row_first.size() - 1;
  plan->batches.reserve(per_rank);
  const size_t expect = fit.doc.size() * per_rank * B / std::max<uint64_t>(R, 1) + per_rank * B;
  plan->records.reserve(expect);
  plan->entry_rows.reserve(expect);
  plan->pieces.reserve(expect);
  for (uint64_t j = 0; j < per_rank; ++j) {
    PlannedBatch pb = NewPackedBatch(*plan, B, L);
    for (uint32_t row = 0; row < B; ++row) {
      const uint64_t k = plan->sequences[j * B + row];
      const uint64_t fr = k < R ? k : (k - R) % R;
      uint32_t column = 0;
      for (uint64_t p = fit.row_first[fr]; p < fit.row_first[fr + 1]; ++p) {
        const uint32_t n = lengths[fit.doc[p]], len = fit.length[p], first = fit.first[p];
        const bool goes_on = column + len == L && first + len < n;
        plan->records.push_back(stream[fit.doc[p]]);
        plan->entry_rows.push_back(row);
        plan->pieces.push_back({column, len + (goes_on ? 1u : 0u), first});
        column += len;
        plan->length += len;
      }
    }
    pb.entries = static_cast<uint32_t>(plan->records.size() - pb.first);
    plan->padded_length += B * L;
    plan->batches.push_back(pb);
  }
}

}  // namespace

Status MakeFitPlan(const IndexColumns& index, const BatchingOptions& batching,
                   const PackingOptions& packing, uint64_t seed, uint64_t epoch,
                   const std::vector<WorldSegment>& earlier, int rank, int world,
                   const MixOptions* mix, EpochPlan* plan) {
  SLUICE_RETURN_IF_ERROR(StartPackedPlan(index, packing, seed, epoch, rank, world, plan));
  if (packing.fit_window == 0)
    return Status::InvalidArgument("packing: fit_window must be at least 1 document");
  const uint32_t L = packing.seq_len;
  const uint64_t B = packing.batch_size;

  // Steps 1-3.
  std::vector<uint64_t> stream;
  if (mix == nullptr) {
    stream = PackedRecordStream(index, batching, packing, seed, epoch);
  } else {  // the mixed epoch's records (mix.h), a record once per occurrence
    std::vector<double> weights;
    for (const MixSource& s : mix->sources) weights.push_back(s.weight);
    SLUICE_RETURN_IF_ERROR(MixedRecordStream(index, weights, mix->epoch_records, batching, seed,
                                             epoch, &stream, &plan->source_records,
                                             &plan->source_repeated));
  }
  if (stream.empty()) return Status::InvalidArgument("no record of the dataset is selected");
  std::vector<uint32_t> lengths(stream.size());
  for (size_t p = 0; p < stream.size(); ++p) lengths[p] = index.tokens[stream[p]];
  FitRows fit;
  FitDocuments(lengths, packing, &fit);
  const uint64_t R = fit.row_first.size() - 1;
  if (R == 0)
    return Status::InvalidArgument(
        "packing: every one of the " + std::to_string(stream.size()) +
        " selected documents is longer than seq_len " + std::to_string(L) +
        " and too_long is skip: nothing is left to pack. HINT: raise seq_len, set split_long, "
        "or too_long truncate");
  // Step 4: whole batches on every rank, then this rank's sequences (of the rest of the epoch
  // after `earlier`).
  PackedSequences ps;
  SLUICE_RETURN_IF_ERROR(
      PlanSequences(R, earlier, B, rank, world, batching, packing, seed, epoch, &ps));
  CountFit(fit, ps, earlier.empty(), L, plan);
  // Step 5: the rows of each step dealt to the ranks (rank_balance.h), or each rank's own run;
  // either way the ranks' token spread is measured over the global list.
  if (world > 1) {
    std::vector<uint64_t> row_tokens(R, 0);
    for (uint64_t row = 0; row < R; ++row)
      for (uint64_t p = fit.row_first[row]; p < fit.row_first[row + 1]; ++p)
        row_tokens[row] += fit.length[p];
    if (earlier.empty()) RankSequences(ps.S, 0, ps.S, batching, packing, seed, epoch, &ps.global);
    RankBalance balance;
    DealRanks(
        ps.global, [&](uint64_t k) { return row_tokens[k < R ? k : (k - R) % R]; }, B, rank, world,
        packing.balance_ranks, &ps.rank, &balance);
    plan->rank_token_spread = balance.max_spread;
    plan->rank_token_ratio = balance.max_ratio;
  }
  plan->sequences = std::move(ps.rank);
  plan->global_batches = ps.global_batches;
  AddFitEntries(fit, stream, lengths, B, L, plan->global_batches / world, plan);
  return Status::OK();
}

}  // namespace sluice::loader
