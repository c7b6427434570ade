// Document fits (PackMode first_fit / best_fit; loader/pack_fit.h) and the per-column arrays of
// every packed batch (positions, doc ids, loss mask, cu_seqlens; loader/batch.h): every token of
// every document an input exactly once across ranks, rows within seq_len, the arrays consistent
// with the ids and with each other, masks right at document and row boundaries, the same batches
// with any thread count, too-long documents split, truncated or skipped and counted, best fit
// wasting no more than first fit, elastic resume on another world for every mode, and mixtures
// packed by weight (refused for concat).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "assert_ok.h"
#include "loader/digest.h"
#include "loader/loader_impl.h"
#include "loader/pack_fit.h"
#include "test_dataset.h"
#include "test_util.h"

namespace sluice::loader {
namespace {

using loader::testing::DocumentPosition;
using loader::testing::DocumentRecord;
using loader::testing::DocumentTokens;

constexpr int kRecords = 240;

// What the epoch's batches showed, across ranks.
struct Seen {
  std::map<std::pair<int64_t, size_t>, int> inputs;  // (document, token index) -> times an input
  std::vector<uint64_t> digests;                     // per batch, ranks one after the other
  std::vector<size_t> batches;                       // per rank
  uint64_t tokens = 0, padding = 0, columns = 0;     // EpochStats summed over ranks
  EpochStats stats;                                  // the last rank's
  EpochPlan plan;                                    // the last rank's
};

// Where each source's records start in the loader's numbering: {0} for one dataset. Record r of
// a source holds DocumentTokens(r - its first).
std::vector<uint64_t> g_source_first = {0};
int LocalDocument(int64_t doc) {
  const auto it =
      std::upper_bound(g_source_first.begin(), g_source_first.end(), static_cast<uint64_t>(doc));
  return static_cast<int>(static_cast<uint64_t>(doc) - *(it - 1));
}

// The index of id `id` in document `doc` (ids name their place; the last is the end id 1).
size_t TokenIndex(int64_t doc, int32_t id) {
  const std::vector<int32_t> d = DocumentTokens(LocalDocument(doc));
  if (id == 1) return d.size() - 1;
  EXPECT_EQ(DocumentRecord(id), LocalDocument(doc)) << "id " << id << " is not of document " << doc;
  return static_cast<size_t>(DocumentPosition(id));
}

// Checks one packed batch's arrays against its ids and each other; counts the inputs of rows
// that are not repeats (sequence < repeat_from).
void CheckBatch(const Batch& b, uint64_t repeat_from, Seen* seen) {
  const size_t L = static_cast<size_t>(b.seq_len()), B = b.size();
  ASSERT_GT(L, 0u);
  ASSERT_NE(b.positions(), nullptr);
  std::vector<int32_t> cu;
  for (size_t row = 0; row < B; ++row) {
    const int32_t* ids = b.tokens() + row * (L + 1);
    const int32_t* pos = b.positions() + row * L;
    const int64_t* doc = b.doc_ids() + row * L;
    const uint8_t* mask = b.loss_mask() + row * L;
    const int32_t* row_cu = b.row_cu_seqlens() + row * (L + 1);
    const bool counted = b.sequences()[row] < repeat_from;
    std::vector<int32_t> starts;
    size_t prev_k = 0;
    for (size_t c = 0; c < L; ++c) {
      SCOPED_TRACE("batch " + std::to_string(b.index()) + " row " + std::to_string(row) +
                   " column " + std::to_string(c));
      if (pos[c] == 0) {
        starts.push_back(static_cast<int32_t>(c));
        cu.push_back(static_cast<int32_t>(row * L + c));
      } else {
        ASSERT_GT(c, 0u);
        EXPECT_EQ(pos[c], pos[c - 1] + 1);
        EXPECT_EQ(doc[c], doc[c - 1]);
      }
      if (doc[c] < 0) {  // padding: no id, no loss
        EXPECT_EQ(ids[c], 0);
        EXPECT_EQ(mask[c], 0);
        continue;
      }
      const size_t k = TokenIndex(doc[c], ids[c]);
      if (pos[c] > 0) {
        EXPECT_EQ(k, prev_k + 1) << "a document's ids are consecutive";
      }
      prev_k = k;
      if (counted) seen->inputs[{doc[c], k}]++;
      // Loss where the next column is this document's next id, and only there.
      const std::vector<int32_t> d = DocumentTokens(LocalDocument(doc[c]));
      const bool next_is_own = k + 1 < d.size() && ids[c + 1] == d[k + 1] &&
                               (c + 1 == L || (doc[c + 1] == doc[c] && pos[c + 1] == pos[c] + 1));
      EXPECT_EQ(mask[c], next_is_own ? 1 : 0) << "id " << ids[c] << " next " << ids[c + 1];
    }
    EXPECT_FALSE(starts.empty());
    EXPECT_EQ(starts.front(), 0) << "every row starts a segment";
    for (size_t s = 0; s <= L; ++s)
      EXPECT_EQ(row_cu[s], s < starts.size() ? starts[s] : static_cast<int32_t>(L))
          << "row " << row << " cu_seqlens entry " << s;
  }
  cu.push_back(static_cast<int32_t>(B * L));
  EXPECT_EQ(std::vector<int32_t>(b.cu_seqlens().begin(), b.cu_seqlens().end()), cu);
}

class PackFitTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new sluice::testing::TempDir();
    loader::testing::WriteTokenDataset(dir_->path(), kRecords);
  }
  static void TearDownTestSuite() { delete dir_; }

  // Documents are 2..24 ids: at L 11 many are split, and rows take a few documents each.
  static LoaderOptions Options(PackMode mode) {
    LoaderOptions o;
    o.threads = 2;
    o.seed = 3;
    o.batching.shuffle_window = 16;
    o.packing.seq_len = 11;
    o.packing.batch_size = 3;
    o.packing.shuffle_window = 8;
    o.packing.chunk_tokens = 200;
    o.packing.pack_mode = mode;
    o.packing.fit_window = 40;
    return o;
  }

  // Every rank's epoch, checked batch by batch.
  static Seen RunRanks(LoaderOptions o, int world, uint64_t epoch = 0) {
    Seen seen;
    o.world = world;
    for (int rank = 0; rank < world; ++rank) {
      o.rank = rank;
      std::unique_ptr<Loader> l;
      EXPECT_OK(Loader::Open(dir_->path(), o, &l));
      if (!l) return seen;
      EXPECT_OK(l->Start(epoch));
      const EpochPlan& plan = ImplOf(*l).plan();
      const uint64_t repeat_from =
          o.packing.pack_mode == PackMode::kConcat ? ~uint64_t{0} : plan.fit_rows;
      const Batch* b;
      Status st;
      size_t n = 0;
      while ((st = l->Next(&b)).ok() && b != nullptr) {
        CheckBatch(*b, repeat_from, &seen);
        seen.digests.push_back(DigestOf(*b));
        ++n;
      }
      EXPECT_OK(st);
      seen.batches.push_back(n);
      seen.stats = l->stats();
      seen.tokens += seen.stats.tokens;
      seen.padding += seen.stats.padding_tokens;
      seen.columns += seen.stats.input_columns;
      seen.plan = plan;
    }
    return seen;
  }

  static sluice::testing::TempDir* dir_;
};
sluice::testing::TempDir* PackFitTest::dir_ = nullptr;

TEST_F(PackFitTest, EveryTokenOnceAcrossRanksWithRowsWithinSeqLen) {
  for (PackMode mode : {PackMode::kFirstFit, PackMode::kBestFit}) {
    for (int world = 1; world <= 3; ++world) {
      SCOPED_TRACE("mode " + std::to_string(static_cast<int>(mode)) + " world " +
                   std::to_string(world));
      const Seen seen = RunRanks(Options(mode), world);
      uint64_t all = 0;
      for (int r = 0; r < kRecords; ++r) {
        const size_t n = DocumentTokens(r).size();
        all += n;
        for (size_t k = 0; k < n; ++k) {
          const auto it = seen.inputs.find({r, k});
          EXPECT_EQ(it == seen.inputs.end() ? 0 : it->second, 1)
              << "document " << r << " token " << k;
        }
      }
      EXPECT_EQ(seen.inputs.size(), all);
      for (size_t n : seen.batches) EXPECT_EQ(n, seen.batches.front()) << "equal batch counts";
      const EpochStats& s = seen.stats;
      EXPECT_EQ(s.stream_tokens, all);
      EXPECT_EQ(seen.tokens, s.stream_tokens + s.wrapped_tokens) << "repeated rows counted";
      EXPECT_EQ(seen.padding, s.fit_padding);
      EXPECT_EQ(seen.columns, seen.tokens + seen.padding);
      uint64_t longer = 0;
      for (int r = 0; r < kRecords; ++r) longer += DocumentTokens(r).size() > 11;
      EXPECT_EQ(s.split_documents, longer);
      EXPECT_GT(longer, 0u);
      // The plan's rows: pieces from column 0 on, side by side, within L inputs.
      const EpochPlan& p = seen.plan;
      ASSERT_EQ(p.pieces.size(), p.records.size());
      for (const PlannedBatch& pb : p.batches) {
        uint32_t column = 0, row = 0;
        for (uint64_t e = pb.first; e < pb.first + pb.entries; ++e) {
          if (p.row_of(e, pb) != row) {
            row = p.row_of(e, pb);
            column = 0;
          }
          EXPECT_EQ(p.pieces[e].column, column);
          const uint32_t inputs = std::min<uint32_t>(p.pieces[e].width, 11 - column);
          column += inputs;
          EXPECT_LE(column, 11u);
          EXPECT_LE(p.pieces[e].column + p.pieces[e].width, 12u);
        }
      }
    }
  }
}

TEST_F(PackFitTest, ConcatBatchesCarryPositionsMasksAndCuSeqlens) {
  // Concat rows cross documents: the arrays still restart at each one, and the mask drops the
  // end id's prediction of the next document. CheckBatch checks it all.
  const Seen seen = RunRanks(Options(PackMode::kConcat), 2);
  EXPECT_EQ(seen.padding, 0u);
  EXPECT_EQ(seen.tokens, seen.columns);
  EXPECT_EQ(seen.stats.padding_waste(), 0.0);
}

TEST_F(PackFitTest, SameBatchesWithOneOrThreeThreadsAndAnotherPerEpoch) {
  for (PackMode mode : {PackMode::kFirstFit, PackMode::kBestFit}) {
    LoaderOptions o = Options(mode);
    o.threads = 1;
    const Seen one = RunRanks(o, 2);
    o.threads = 3;
    const Seen three = RunRanks(o, 2);
    EXPECT_EQ(one.digests, three.digests);
    EXPECT_NE(one.digests, RunRanks(o, 2, 1).digests) << "epoch 1 is shuffled otherwise";
  }
}

TEST_F(PackFitTest, ResumeAtAnyBatchEqualsTheUninterruptedRun) {
  const LoaderOptions o = Options(PackMode::kBestFit);
  const std::vector<uint64_t> full = RunRanks(o, 1).digests;
  ASSERT_GT(full.size(), 4u);
  for (uint64_t start : {uint64_t{1}, uint64_t{full.size() / 2}, uint64_t{full.size() - 1}}) {
    std::unique_ptr<Loader> l;
    ASSERT_OK(Loader::Open(dir_->path(), o, &l));
    ASSERT_OK(l->Start(0, start));
    std::vector<uint64_t> rest;
    const Batch* b;
    while (l->Next(&b).ok() && b != nullptr) rest.push_back(DigestOf(*b));
    EXPECT_EQ(rest, std::vector<uint64_t>(full.begin() + start, full.end())) << start;
  }
}

TEST_F(PackFitTest, TooLongDocumentsAreTruncatedOrSkippedAndCounted) {
  uint64_t longer = 0, dropped = 0, skipped = 0;
  for (int r = 0; r < kRecords; ++r) {
    const uint64_t n = DocumentTokens(r).size();
    if (n > 11) {
      longer++;
      dropped += n - 11;
      skipped += n;
    }
  }
  LoaderOptions o = Options(PackMode::kBestFit);
  o.packing.split_long = false;
  o.packing.too_long = TooLong::kTruncate;
  Seen seen = RunRanks(o, 1);
  EXPECT_EQ(seen.stats.split_documents, 0u);
  EXPECT_EQ(seen.stats.truncated_documents, longer);
  EXPECT_EQ(seen.stats.truncated_tokens, dropped);
  for (int r = 0; r < kRecords; ++r) {  // a truncated document's first L ids, once
    const size_t n = DocumentTokens(r).size();
    for (size_t k = 0; k < n; ++k)
      EXPECT_EQ(seen.inputs.count({r, k}), k < 11 ? 1u : 0u) << r << " " << k;
  }
  o.packing.too_long = TooLong::kSkip;
  seen = RunRanks(o, 1);
  EXPECT_EQ(seen.stats.skipped_documents, longer);
  EXPECT_EQ(seen.stats.skipped_tokens, skipped);
  for (int r = 0; r < kRecords; ++r)
    EXPECT_EQ(seen.inputs.count({r, 0}), DocumentTokens(r).size() > 11 ? 0u : 1u) << r;
}

TEST_F(PackFitTest, BestFitWastesNoMoreThanFirstFit) {
  const Seen first = RunRanks(Options(PackMode::kFirstFit), 1);
  const Seen best = RunRanks(Options(PackMode::kBestFit), 1);
  EXPECT_LE(best.plan.fit_rows, first.plan.fit_rows);
  EXPECT_LE(best.stats.padding_waste(), first.stats.padding_waste());
  EXPECT_GT(first.stats.padding_waste(), 0.0);
}

// Lengths from a lognormal (median 300 tokens, a long tail), as web documents are: best fit
// decreasing leaves less padding than greedy first fit, and both hold every token once.
TEST(FitDocuments, BestFitPadsLessThanFirstFitOnLognormalLengths) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> dist(std::log(300.0), 1.0);
  std::vector<uint32_t> lengths(5000);
  for (uint32_t& n : lengths) n = std::max<uint32_t>(1, static_cast<uint32_t>(dist(rng)));
  PackingOptions p;
  p.seq_len = 2048;
  p.fit_window = 1000;
  FitRows first, best;
  p.pack_mode = PackMode::kFirstFit;
  FitDocuments(lengths, p, &first);
  p.pack_mode = PackMode::kBestFit;
  FitDocuments(lengths, p, &best);
  EXPECT_LT(best.padding, first.padding);
  for (const FitRows* f : {&first, &best}) {
    std::vector<std::vector<std::pair<uint32_t, uint32_t>>> parts(lengths.size());
    for (size_t row = 0; row + 1 < f->row_first.size(); ++row) {
      uint64_t used = 0;
      for (uint64_t q = f->row_first[row]; q < f->row_first[row + 1]; ++q) {
        used += f->length[q];
        parts[f->doc[q]].push_back({f->first[q], f->length[q]});
      }
      EXPECT_LE(used, p.seq_len);
    }
    for (size_t d = 0; d < lengths.size(); ++d) {  // the parts tile the document
      std::sort(parts[d].begin(), parts[d].end());
      uint32_t next = 0;
      for (const auto& [first, length] : parts[d]) {
        EXPECT_EQ(first, next) << "document " << d;
        next = first + length;
      }
      EXPECT_EQ(next, lengths[d]) << "document " << d;
    }
    const uint64_t rows = f->row_first.size() - 1;
    uint64_t total = 0;
    for (uint32_t n : lengths) total += n;
    EXPECT_EQ(f->padding, rows * p.seq_len - total);
  }
}

// One stretch of an elastic run: every rank of `world` resumes at `state` and takes `take`
// batches (SIZE_MAX: to the end). Appends the real sequences (k < real) its rows hold.
struct Stretch {
  std::vector<uint64_t> sequences;
  std::vector<size_t> batches;  // per rank, all the plan has
  ResumeState end;              // rank 0's state after it
};
Stretch RunStretch(const std::string& dir, LoaderOptions o, int world, const ResumeState& state,
                   size_t take) {
  Stretch out;
  o.world = world;
  for (int rank = 0; rank < world; ++rank) {
    o.rank = rank;
    std::unique_ptr<Loader> l;
    EXPECT_OK(Loader::Open(dir, o, &l));
    if (!l) return out;
    EXPECT_OK(l->Start(state));
    const EpochPlan& plan = ImplOf(*l).plan();
    const uint64_t real = o.packing.pack_mode == PackMode::kConcat
                              ? (plan.stream_tokens + o.packing.seq_len - 1) / o.packing.seq_len
                              : plan.fit_rows;
    out.batches.push_back(plan.batches.size());
    Seen seen;
    const Batch* b;
    for (size_t n = 0; n < take && l->Next(&b).ok() && b != nullptr; ++n) {
      CheckBatch(*b, real, &seen);
      for (uint64_t k : b->sequences())
        if (k < real) out.sequences.push_back(k);
    }
    if (rank == 0) out.end = l->state();
  }
  return out;
}

// Elastic resume of packed epochs, every mode: what the earlier stretches took and what the new
// world takes is every real sequence (so every token) exactly once, with equal batch counts.
TEST_F(PackFitTest, ElasticResumeTakesTheRestOfThePackedEpochExactlyOnce) {
  struct Case {
    std::vector<int> worlds;
    std::vector<size_t> takes;  // per stretch but the last
  };
  const std::vector<Case> cases = {{{2, 3}, {0}},       {{2, 3}, {1}},       {{3, 2}, {4}},
                                   {{1, 2}, {7}},       {{2, 1}, {3}},       {{4, 3}, {2}},
                                   {{2, 3, 4}, {2, 1}}, {{2, 3}, {SIZE_MAX}}};
  for (PackMode mode : {PackMode::kConcat, PackMode::kFirstFit, PackMode::kBestFit}) {
    const LoaderOptions o = Options(mode);
    const Stretch whole = RunStretch(dir_->path(), o, 1, ResumeState{}, SIZE_MAX);
    std::vector<uint64_t> want = whole.sequences;
    std::sort(want.begin(), want.end());
    ASSERT_FALSE(want.empty());
    for (const Case& c : cases) {
      std::string name = "mode " + std::to_string(static_cast<int>(mode)) + " worlds";
      for (int w : c.worlds) name += " " + std::to_string(w);
      name += " at";
      for (size_t t : c.takes) name += " " + std::to_string(t);
      SCOPED_TRACE(name);
      std::vector<uint64_t> got;
      ResumeState state;
      for (size_t i = 0; i < c.worlds.size(); ++i) {
        const bool last = i + 1 == c.worlds.size();
        const Stretch s =
            RunStretch(dir_->path(), o, c.worlds[i], state, last ? SIZE_MAX : c.takes[i]);
        got.insert(got.end(), s.sequences.begin(), s.sequences.end());
        for (size_t n : s.batches) EXPECT_EQ(n, s.batches.front()) << "equal batch counts";
        state = s.end;
      }
      std::sort(got.begin(), got.end());
      EXPECT_EQ(got, want) << "each real sequence once, taken before or after";
    }
  }
}

TEST_F(PackFitTest, MixtureIsPackedByWeightEachOccurrenceWhole) {
  sluice::testing::TempDir small;
  loader::testing::WriteTokenDataset(small.path(), 60);
  MixOptions mix;
  mix.sources = {{dir_->path(), 1.0}, {small.path(), 2.0}};  // 100 and 200 of 300 documents
  g_source_first = {0, kRecords};
  for (PackMode mode : {PackMode::kFirstFit, PackMode::kBestFit}) {
    SCOPED_TRACE("mode " + std::to_string(static_cast<int>(mode)));
    LoaderOptions o = Options(mode);
    o.world = 2;
    Seen seen;
    std::vector<size_t> batches;
    EpochStats stats;
    for (int rank = 0; rank < 2; ++rank) {
      o.rank = rank;
      std::unique_ptr<Loader> l;
      ASSERT_OK(Loader::Open(mix, o, &l));
      ASSERT_OK(l->Start(0));
      const uint64_t real = ImplOf(*l).plan().fit_rows;
      const Batch* b;
      size_t n = 0;
      while (l->Next(&b).ok() && b != nullptr) {
        CheckBatch(*b, real, &seen);
        ++n;
      }
      batches.push_back(n);
      stats = l->stats();
    }
    EXPECT_EQ(batches[0], batches[1]);
    ASSERT_EQ(stats.sources.size(), 2u);
    EXPECT_EQ(stats.sources[0].records, 100u);
    EXPECT_EQ(stats.sources[1].records, 200u);
    EXPECT_EQ(stats.sources[1].repeated, 140u) << "60 documents drawn 200 times";
    // Every token of a document as often as the document was drawn, per source by weight.
    uint64_t drawn[2] = {0, 0};
    for (const auto& [at, times] : seen.inputs) {
      EXPECT_EQ(times, seen.inputs.at({at.first, 0}))
          << "document " << at.first << " id " << at.second;
      if (at.second == 0) drawn[at.first >= kRecords] += times;
    }
    EXPECT_EQ(drawn[0], 100u);
    EXPECT_EQ(drawn[1], 200u);
  }
  g_source_first = {0};
  // Concat places a record by its one offset in the stream: a mixture is refused, with a hint.
  std::unique_ptr<Loader> l;
  const Status st = Loader::Open(mix, Options(PackMode::kConcat), &l);
  EXPECT_TRUE(st.IsUnsupported()) << st.ToString();
  EXPECT_NE(st.ToString().find("best_fit"), std::string::npos) << st.ToString();
}

TEST_F(PackFitTest, EverythingSkippedIsRefusedWithAHint) {
  LoaderOptions o = Options(PackMode::kBestFit);
  o.packing.seq_len = 1;  // every document has at least 2 ids
  o.packing.split_long = false;
  o.packing.too_long = TooLong::kSkip;
  std::unique_ptr<Loader> l;
  ASSERT_OK(Loader::Open(dir_->path(), o, &l));
  const Status st = l->Start(0);
  EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
  EXPECT_NE(st.ToString().find("HINT"), std::string::npos) << st.ToString();
}

}  // namespace
}  // namespace sluice::loader
