// Language-model packing end to end (PackingOptions; loader/pack.h): every token of the epoch's
// stream is an input exactly once across ranks (plus the counted wrap), equal batch counts,
// documents joined by their end-of-document id, the same bytes with any thread count, exact
// resume, and the ASR token budget (BatchingOptions::max_tokens).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <vector>

#include "loader/digest.h"
#include "loader/loader_impl.h"
#include "loader/pack.h"
#include "test_dataset.h"
#include "test_util.h"
#include "assert_ok.h"

namespace sluice::loader {
namespace {

using loader::testing::DocumentPosition;
using loader::testing::DocumentRecord;
using loader::testing::DocumentTokens;

constexpr int kRecords = 300;

IndexColumns IndexOf(const std::string& dir) {
  std::unique_ptr<Loader> l;
  LoaderOptions o;
  EXPECT_OK(Loader::Open(dir, o, &l));
  return l ? ImplOf(*l).index() : IndexColumns();
}

struct Row {
  uint64_t sequence = 0;
  std::vector<int32_t> ids;
};

struct RankRun {
  std::vector<uint64_t> digests;  // per batch
  std::vector<Row> rows;
  EpochStats stats;
  EpochPlan plan;
};

class PackTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new sluice::testing::TempDir();
    loader::testing::WriteTokenDataset(dir_->path(), kRecords);
    text_dir_ = new sluice::testing::TempDir();
    loader::testing::WriteTokenDataset(text_dir_->path(), kRecords, 3000, /*store_ids=*/false);
  }
  static void TearDownTestSuite() {
    delete dir_;
    delete text_dir_;
  }

  // The same documents stored as text with their counts, tokenized online (shardify text
  // --store text): other blocks, same stream.
  static LoaderOptions Online(LoaderOptions o) {
    o.tokenizer = loader::testing::TextToDocumentTokens;
    return o;
  }

  static LoaderOptions Options() {
    LoaderOptions o;
    o.threads = 2;
    o.seed = 5;
    o.batching.shuffle_window = 16;
    o.packing.seq_len = 37;  // prime: rows start anywhere in documents
    o.packing.batch_size = 3;
    o.packing.shuffle_window = 8;
    o.packing.chunk_tokens = 300;  // about 20 documents: the chunk shuffle at work
    return o;
  }

  // Opens `dir`, starts epoch 0 and takes every batch: the status that ended the epoch.
  static Status EpochEnd(const std::string& dir, const LoaderOptions& o) {
    std::unique_ptr<Loader> l;
    Status st = Loader::Open(dir, o, &l);
    EXPECT_OK(st);
    if (!st.ok()) return st;
    st = l->Start(0);
    EXPECT_OK(st);
    const Batch* b;
    while (st.ok() && (st = l->Next(&b)).ok() && b != nullptr) {
    }
    return st;
  }

  // document_ids: the dataset's ids are DocumentTokens' (WriteTokenDataset), which name their
  // document.
  static RankRun Run(const LoaderOptions& o, uint64_t epoch, uint64_t start = 0,
                     const std::string& dir = "", bool document_ids = true) {
    RankRun run;
    std::unique_ptr<Loader> l;
    Status st = Loader::Open(dir.empty() ? dir_->path() : dir, o, &l);
    EXPECT_OK(st);
    if (!st.ok()) return run;
    st = l->Start(epoch, start);
    EXPECT_OK(st);
    const Batch* b;
    while ((st = l->Next(&b)).ok() && b != nullptr) {
      run.digests.push_back(DigestOf(*b));
      EXPECT_EQ(b->seq_len(), o.packing.seq_len);
      EXPECT_EQ(b->size(), o.packing.batch_size);
      EXPECT_EQ(b->max_tokens(), o.packing.seq_len + 1);
      for (size_t i = 0; i < b->size(); ++i) {
        EXPECT_EQ(b->token_lengths()[i], o.packing.seq_len + 1);
        const int32_t* ids = b->tokens() + i * b->max_tokens();
        // The row's key is the document of its first token.
        if (document_ids && ids[0] >= 2 && b->skipped() == 0) {
          EXPECT_EQ(b->record_ids()[i], static_cast<uint64_t>(DocumentRecord(ids[0])));
          EXPECT_EQ(b->keys()[i], loader::testing::RecordKey(DocumentRecord(ids[0])));
        }
        run.rows.push_back({b->sequences()[i], std::vector<int32_t>(ids, ids + b->max_tokens())});
      }
    }
    EXPECT_OK(st);
    run.stats = l->stats();
    run.plan = ImplOf(*l).plan();
    return run;
  }

  // The epoch's token stream as the plan defines it: documents in PackedRecordStream order.
  static std::vector<int32_t> Stream(const LoaderOptions& o, uint64_t epoch) {
    std::unique_ptr<Loader> l;
    EXPECT_OK(Loader::Open(dir_->path(), o, &l));
    std::vector<int32_t> stream;
    const IndexColumns& index = ImplOf(*l).index();
    for (uint64_t r : PackedRecordStream(index, o.batching, o.packing, o.seed, epoch)) {
      // Record ids are the dataset's order, which is the writer's: record r is document r.
      const std::vector<int32_t> ids = DocumentTokens(static_cast<int>(r));
      stream.insert(stream.end(), ids.begin(), ids.end());
    }
    EXPECT_EQ(stream.size(), ImplOf(*l).dataset().manifest().tokens);
    return stream;
  }

  static sluice::testing::TempDir* dir_;
  static sluice::testing::TempDir* text_dir_;
};
sluice::testing::TempDir* PackTest::dir_ = nullptr;
sluice::testing::TempDir* PackTest::text_dir_ = nullptr;

TEST_F(PackTest, EveryTokenOnceAcrossRanksWithEqualCounts) {
  // World 1-4 over the stored ids; 2 and 3 ranks over the same documents tokenized online.
  const std::pair<int, bool> cases[] = {{1, false}, {2, false}, {3, false},
                                        {4, false}, {2, true},  {3, true}};
  for (const auto& [world, online] : cases) {
    SCOPED_TRACE("world " + std::to_string(world) + (online ? ", tokenized online" : ""));
    LoaderOptions o = online ? Online(Options()) : Options();
    const std::string dir = online ? text_dir_->path() : dir_->path();
    o.world = world;
    const std::vector<int32_t> stream = Stream(o, 2);
    const uint64_t T = stream.size(), L = o.packing.seq_len;
    std::vector<int> input_count(T, 0);
    std::vector<uint64_t> sequences;
    uint64_t batches = 0, tokens = 0, wrapped = 0;
    for (int rank = 0; rank < world; ++rank) {
      o.rank = rank;
      const RankRun run = Run(o, 2, 0, dir);
      if (rank == 0) batches = run.digests.size();
      EXPECT_EQ(run.digests.size(), batches) << "rank " << rank;
      EXPECT_EQ(run.stats.pool_allocations, 0u);
      EXPECT_EQ(run.plan.stream_tokens, T);
      wrapped = run.plan.wrapped_tokens;
      tokens += run.stats.tokens;
      for (const Row& row : run.rows) {
        sequences.push_back(row.sequence);
        for (uint64_t i = 0; i <= L; ++i)  // the row is the stream from k*L, wrapped at T
          ASSERT_EQ(row.ids[i], stream[(row.sequence * L + i) % T])
              << "sequence " << row.sequence << " token " << i;
        for (uint64_t i = 0; i < L; ++i) input_count[(row.sequence * L + i) % T]++;
      }
    }
    ASSERT_GT(batches, 0u);
    // Sequences 0..S-1, each on exactly one rank: inputs tile [0, S*L).
    std::sort(sequences.begin(), sequences.end());
    std::vector<uint64_t> all(sequences.size());
    std::iota(all.begin(), all.end(), 0);
    EXPECT_EQ(sequences, all);
    // Every token an input once; the wrapped tail repeats the first `wrapped` tokens once more,
    // and is less than one global batch of sequences.
    EXPECT_EQ(sequences.size() * L, T + wrapped);
    EXPECT_LT(wrapped, L * o.packing.batch_size * world);
    for (uint64_t p = 0; p < T; ++p)
      ASSERT_EQ(input_count[p], p < wrapped ? 2 : 1) << "stream token " << p;
    EXPECT_EQ(tokens, T + wrapped);
  }
}

// A filtered packed epoch: only the selected documents' tokens, each of them, and the same
// batches whether the ids are stored or tokenized online.
TEST_F(PackTest, SelectPacksOnlyTheSelectedDocuments) {
  auto selected = [](int r) { return r % 3 != 1; };
  LoaderOptions o = Options();
  o.select = [&](std::string_view key) {
    for (int r = 0; r < kRecords; ++r)
      if (key == loader::testing::RecordKey(r)) return selected(r);
    ADD_FAILURE() << "unknown key " << key;
    return false;
  };
  o.world = 2;
  std::set<int> documents;
  for (int rank = 0; rank < 2; ++rank) {
    o.rank = rank;
    const RankRun run = Run(o, 1);
    ASSERT_GT(run.digests.size(), 0u);
    for (const Row& row : run.rows)
      for (int32_t id : row.ids)
        if (id >= 2) {
          ASSERT_TRUE(selected(DocumentRecord(id))) << "token of document " << DocumentRecord(id);
          documents.insert(DocumentRecord(id));
        }
    EXPECT_EQ(run.digests, Run(Online(o), 1, 0, text_dir_->path()).digests) << "rank " << rank;
  }
  int want = 0;
  for (int r = 0; r < kRecords; ++r) want += selected(r);
  EXPECT_EQ(documents.size(), static_cast<size_t>(want));
}

// shardify text --tokenizer X (ids stored) and --tokenizer X --store text (counted, tokenized
// online) of the same text: their blocks hold different records, their epochs the same batches.
TEST_F(PackTest, OnlineTokenizedDatasetGivesTheOfflineBatches) {
  {
    std::unique_ptr<Loader> ids, text;
    ASSERT_OK(Loader::Open(dir_->path(), Options(), &ids));
    ASSERT_OK(Loader::Open(text_dir_->path(), Online(Options()), &text));
    // The layouts differ.
    ASSERT_LT(ImplOf(*text).index().num_blocks(), ImplOf(*ids).index().num_blocks());
  }
  const IndexColumns index = IndexOf(dir_->path());
  // Each block is read once per shuffle chunk it holds records of, at most.
  const uint64_t max_reads =
      index.num_blocks() + PackChunks(index, Options().packing.chunk_tokens).size() - 1;
  for (int world : {1, 2, 3}) {
    for (int rank = 0; rank < world; ++rank) {
      SCOPED_TRACE("rank " + std::to_string(rank) + " of " + std::to_string(world));
      LoaderOptions o = Options();
      o.world = world;
      o.rank = rank;
      const RankRun offline = Run(o, 1);
      const RankRun online = Run(Online(o), 1, 0, text_dir_->path());
      ASSERT_FALSE(offline.digests.empty());
      EXPECT_EQ(online.digests, offline.digests);
      EXPECT_EQ(online.stats.tokens, offline.stats.tokens);
      EXPECT_EQ(online.stats.pool_allocations, 0u);
      EXPECT_LE(offline.stats.blocks_read, max_reads);
    }
  }
}

TEST_F(PackTest, OnlineResumeEqualsTheUninterruptedRun) {
  LoaderOptions o = Online(Options());
  o.world = 3;
  o.rank = 2;
  const RankRun full = Run(o, 4, 0, text_dir_->path());
  const uint64_t n = full.digests.size();
  ASSERT_GT(n, 3u);
  for (uint64_t start : {uint64_t{1}, n / 2, n - 1}) {
    const RankRun resumed = Run(o, 4, start, text_dir_->path());
    EXPECT_EQ(resumed.digests,
              std::vector<uint64_t>(full.digests.begin() + start, full.digests.end()))
        << "start " << start;
  }
}

// A tokenizer that disagrees with the index's counts would misplace every later token: the
// epoch stops with an error naming the shard, block and record, under either corrupt policy.
TEST_F(PackTest, TokenCountMismatchStopsTheEpochNamingTheRecord) {
  for (CorruptPolicy policy : {CorruptPolicy::kFail, CorruptPolicy::kSkip}) {
    LoaderOptions o = Options();
    o.corrupt = policy;
    o.tokenizer = [](std::string_view text, std::vector<int32_t>* ids) {
      SLUICE_RETURN_IF_ERROR(loader::testing::TextToDocumentTokens(text, ids));
      if (text == loader::testing::RecordText(17)) ids->push_back(5);  // one id too many
      return Status::OK();
    };
    const Status st = EpochEnd(text_dir_->path(), o);
    EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
    EXPECT_NE(st.message().find("record 'utt17'"), std::string::npos) << st.ToString();
    EXPECT_NE(st.message().find("shard-0000"), std::string::npos) << st.ToString();
    EXPECT_NE(st.message().find("index counted"), std::string::npos) << st.ToString();
  }
  // The same without packing: rows per record, checked against the count too.
  LoaderOptions o;
  o.threads = 2;
  o.tokenizer = [](std::string_view, std::vector<int32_t>* ids) {
    *ids = {2, 3, 1};
    return Status::OK();
  };
  const Status st = EpochEnd(text_dir_->path(), o);
  EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
}

// A dataset whose manifest names its tokenizer needs no wiring: Loader::Open loads it for
// records without ids, and packs them as the stored ids; a given tokenizer still wins.
TEST_F(PackTest, DatasetTokenizerIsLoadedByOpen) {
  sluice::testing::TempDir ids, text;
  loader::testing::WriteCharTokenizedDataset(ids.path(), 120, /*store_ids=*/true);
  loader::testing::WriteCharTokenizedDataset(text.path(), 120, /*store_ids=*/false);
  LoaderOptions o = Options();
  o.world = 2;
  for (int rank = 0; rank < 2; ++rank) {
    o.rank = rank;
    const RankRun offline = Run(o, 0, 0, ids.path(), /*document_ids=*/false);
    const RankRun online = Run(o, 0, 0, text.path(), /*document_ids=*/false);
    ASSERT_FALSE(offline.digests.empty());
    EXPECT_EQ(online.digests, offline.digests) << "rank " << rank;
  }
  // Rows per record: the same ids, end-of-document included, padded the same (in file order:
  // the audio-style plan shuffles blocks, which differ between the two).
  LoaderOptions rows;
  rows.threads = 2;
  rows.batching.shuffle = false;
  auto digests = [&](const std::string& dir, const LoaderOptions& opt) {
    std::unique_ptr<Loader> l;
    Status st = Loader::Open(dir, opt, &l);
    EXPECT_OK(st);
    std::vector<uint64_t> d;
    if (!st.ok() || !l->Start(0).ok()) return d;
    const Batch* b;
    while (l->Next(&b).ok() && b != nullptr) {
      EXPECT_GT(b->max_tokens(), 0);
      d.push_back(DigestOf(*b));
    }
    return d;
  };
  EXPECT_EQ(digests(text.path(), rows), digests(ids.path(), rows));
  // A given tokenizer is the one used (here one that disagrees with the counts).
  rows.tokenizer = [](std::string_view, std::vector<int32_t>* v) {
    *v = {2, 1};
    return Status::OK();
  };
  const Status st = EpochEnd(text.path(), rows);
  EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
}

TEST_F(PackTest, DocumentsAreJoinedByTheEndOfDocumentId) {
  const RankRun run = Run(Options(), 0);
  uint64_t joins = 0;
  for (const Row& row : run.rows) {
    for (size_t i = 1; i + 1 < row.ids.size(); ++i) {
      if (row.ids[i] != 1) continue;
      // Before it: the last token of a document; after it: the first token of the next one.
      const int before = DocumentRecord(row.ids[i - 1]);
      EXPECT_EQ(static_cast<size_t>(DocumentPosition(row.ids[i - 1]) + 2),
                DocumentTokens(before).size());
      ASSERT_GE(row.ids[i + 1], 2);
      EXPECT_EQ(DocumentPosition(row.ids[i + 1]), 0);
      EXPECT_NE(DocumentRecord(row.ids[i + 1]), before);
      joins++;
    }
  }
  EXPECT_GT(joins, 50u);  // rows of 38 tokens over documents of 2..24
}

TEST_F(PackTest, SameBatchesWithAnyThreadCountAndShuffledByEpoch) {
  LoaderOptions o = Options();
  o.threads = 1;
  const RankRun one = Run(o, 3);
  o.threads = 3;
  o.blocks_in_flight = 3;
  o.ready_batches = 1;
  const RankRun three = Run(o, 3);
  ASSERT_FALSE(one.digests.empty());
  EXPECT_EQ(one.digests, three.digests);
  EXPECT_LE(three.stats.max_open, three.stats.max_open_bound);
  EXPECT_NE(one.digests, Run(o, 4).digests);
  o.seed++;
  EXPECT_NE(one.digests, Run(o, 3).digests);
  // Sequences are shuffled, not in stream order.
  std::vector<uint64_t> order;
  for (const Row& row : one.rows) order.push_back(row.sequence);
  EXPECT_FALSE(std::is_sorted(order.begin(), order.end()));
}

TEST_F(PackTest, ResumeAtAnyBatchEqualsTheUninterruptedRun) {
  LoaderOptions o = Options();
  o.world = 2;
  o.rank = 1;
  const RankRun full = Run(o, 1);
  const uint64_t n = full.digests.size();
  ASSERT_GT(n, 4u);
  for (uint64_t start : {uint64_t{1}, n / 3, n / 2 + 1, n - 1, n}) {
    const RankRun resumed = Run(o, 1, start);
    EXPECT_EQ(resumed.digests,
              std::vector<uint64_t>(full.digests.begin() + start, full.digests.end()))
        << "start " << start;
    EXPECT_EQ(resumed.stats.start_batch, start);
    // Nothing before the resume point is read: fewer blocks than the whole epoch needs.
    if (start > n / 2) {
      EXPECT_LT(resumed.stats.blocks_read, full.stats.blocks_read);
    }
  }
}

TEST_F(PackTest, RowsLongerThanTheStreamWrapAroundIt) {
  sluice::testing::TempDir tiny;
  loader::testing::WriteTokenDataset(tiny.path(), 3);  // 2 + 9 + 16 = 27 tokens
  LoaderOptions o = Options();
  o.packing.seq_len = 64;
  o.packing.batch_size = 2;
  const RankRun run = Run(o, 0, 0, tiny.path());
  ASSERT_EQ(run.rows.size(), 2u);
  const uint64_t T = run.plan.stream_tokens;
  EXPECT_EQ(T, 27u);
  EXPECT_EQ(run.plan.wrapped_tokens, 2 * 64 - T);
  std::unique_ptr<Loader> l;
  ASSERT_OK(Loader::Open(tiny.path(), o, &l));
  std::vector<int32_t> stream;
  for (uint64_t r : PackedRecordStream(ImplOf(*l).index(), o.batching, o.packing, o.seed, 0)) {
    const std::vector<int32_t> ids = DocumentTokens(static_cast<int>(r));
    stream.insert(stream.end(), ids.begin(), ids.end());
  }
  for (const Row& row : run.rows)
    for (uint64_t i = 0; i < row.ids.size(); ++i)
      ASSERT_EQ(row.ids[i], stream[(row.sequence * 64 + i) % T]);
}

TEST_F(PackTest, CorruptBlockUnderSkipKeepsShapesAndCounts) {
  sluice::testing::TempDir copy;
  loader::testing::WriteTokenDataset(copy.path(), kRecords);
  loader::testing::FlipByteInBlock(copy.path(), "shard-00000.sluice", 1);
  LoaderOptions o = Options();
  const RankRun clean = Run(o, 0);
  o.corrupt = CorruptPolicy::kSkip;
  const RankRun skipped = Run(o, 0, 0, copy.path());
  EXPECT_EQ(skipped.digests.size(), clean.digests.size());
  EXPECT_GT(skipped.stats.skipped_records, 0u);
  o.corrupt = CorruptPolicy::kFail;
  const Status st = EpochEnd(copy.path(), o);
  EXPECT_TRUE(st.IsCorruption()) << st.ToString();
}

TEST_F(PackTest, NeedsTokenCountsAndText) {
  sluice::testing::TempDir text, audio;
  loader::testing::WriteTextDataset(text.path(), 20, /*with_tokens=*/false);
  loader::testing::AudioDatasetSpec spec;
  spec.records = 4;
  loader::testing::WriteAudioDataset(audio.path(), spec);
  LoaderOptions o = Options();
  std::unique_ptr<Loader> l;
  Status st = Loader::Open(text.path(), o, &l);
  EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
  EXPECT_NE(st.message().find("--tokenizer"), std::string::npos) << st.ToString();
  EXPECT_TRUE(Loader::Open(audio.path(), o, &l).IsInvalidArgument());
  // Counts without ids and no tokenizer to make them.
  st = Loader::Open(text_dir_->path(), o, &l);
  EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
  EXPECT_NE(st.message().find("tokenizer"), std::string::npos) << st.ToString();
  o.packing.batch_size = 0;
  EXPECT_TRUE(Loader::Open(dir_->path(), o, &l).IsInvalidArgument());
  o.packing.batch_size = 2;
  o.packing.chunk_tokens = 0;
  EXPECT_TRUE(Loader::Open(dir_->path(), o, &l).IsInvalidArgument());
}

TEST_F(PackTest, TokenBudgetCapsTranscriptBatches) {
  LoaderOptions o;
  o.threads = 2;
  o.batching.max_frames = 0;
  o.batching.max_tokens = 60;
  std::unique_ptr<Loader> l;
  ASSERT_OK(Loader::Open(dir_->path(), o, &l));
  ASSERT_OK(l->Start(0));
  const Batch* b;
  uint64_t rows = 0;
  while (l->Next(&b).ok() && b != nullptr) {
    uint64_t sum = 0;
    for (int32_t n : b->token_lengths()) sum += static_cast<uint64_t>(n);
    EXPECT_TRUE(sum <= 60 || b->size() == 1) << sum;
    rows += b->size();
  }
  EXPECT_EQ(rows, static_cast<uint64_t>(kRecords));
}

// The batch pool of a packed epoch is a function of the options and the block size: the
// stream's tail wrapping to its beginning must not make the read unit of the first documents
// span the whole epoch (which lifted the open-batch cap to every batch and let each block
// straddling two chunks hold open the far batches it feeds, a pool growing with the number of
// chunks, i.e. with the dataset). Finer chunks read more blocks twice instead.
TEST_F(PackTest, PoolDoesNotGrowWithTheNumberOfChunks) {
  LoaderOptions o = Options();
  o.blocks_in_flight = 3;
  o.packing.shuffle_window = 1;
  o.packing.batch_size = 1;
  std::vector<uint64_t> bounds, blocks_read;
  for (uint64_t chunk : {uint64_t{1} << 30, uint64_t{300}, uint64_t{40}}) {
    SCOPED_TRACE("chunk_tokens " + std::to_string(chunk));
    o.packing.chunk_tokens = chunk;
    const RankRun run = Run(o, 2);
    ASSERT_FALSE(run.digests.empty());
    EXPECT_LE(run.stats.max_open, run.stats.max_open_bound);
    // Not (nearly) every batch of the epoch, as when the wrap lifted the cap (99 of 106 at 40).
    EXPECT_LT(run.stats.max_open_bound, run.digests.size() * 3 / 4);
    blocks_read.push_back(run.stats.blocks_read);
    bounds.push_back(run.stats.max_open_bound);
  }
  // One chunk: 39 batches open at most here; 40-token chunks (a few documents, several per
  // block) stay near it, and pay in blocks read twice instead (11 blocks: 12, 15, 22 reads).
  EXPECT_LE(bounds[1], 2 * bounds[0]);
  EXPECT_LE(bounds[2], 2 * bounds[0]);
  EXPECT_GT(blocks_read[2], blocks_read[0]);
}

}  // namespace
}  // namespace sluice::loader
