// Weighted mixing (loader/mix.h): exact counts by weight, proportions of every prefix within
// their sampling bound over several seeds, sampling without replacement until a source runs
// out, purity, exact and elastic resume of a mixture, and sources that disagree refused.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "assert_ok.h"
#include "loader/digest.h"
#include "loader/loader.h"
#include "loader/mix.h"
#include "synthetic_index.h"
#include "test_dataset.h"
#include "test_util.h"

namespace sluice::loader {
namespace {

using testing::MakeSyntheticIndex;

BatchingOptions Batching() {
  BatchingOptions opt;
  opt.max_frames = 3000;
  opt.shuffle_window = 32;
  return opt;
}

// A synthetic index split into two sources at a shard boundary: source 1 from shard `at` on.
IndexColumns TwoSources(int shards, int at, uint64_t seed) {
  IndexColumns ix = MakeSyntheticIndex(shards, seed);
  ix.source_first_record = {0, ix.shard_first_record[at], ix.num_records()};
  return ix;
}

size_t SourceOf(const IndexColumns& ix, uint64_t r) {
  return r < ix.source_first_record[1] ? 0 : 1;
}

// --data DIR:WEIGHT where DIR is a URL: the weight follows the last ':', a port is not one.
TEST(MixSourceSpec, UrlsKeepTheirPortsAndTakeWeights) {
  const std::vector<std::pair<std::string, MixSource>> cases = {
      {"/data/en:2.5", {"/data/en", 2.5}},
      {"/data/en", {"/data/en", 1.0}},
      {"http://host:8080", {"http://host:8080", 1.0}},
      {"http://host:8080:3", {"http://host:8080", 3.0}},
      {"https://host:8443/corpora/en:2", {"https://host:8443/corpora/en", 2.0}},
      {"https://host:8443/corpora/en", {"https://host:8443/corpora/en", 1.0}},
      {"s3://bucket/en:4", {"s3://bucket/en", 4.0}},
      {"s3://bucket:4", {"s3://bucket", 4.0}},
  };
  for (const auto& [spec, want] : cases) {
    MixSource got;
    ASSERT_OK(ParseMixSource(spec, &got));
    EXPECT_EQ(got.dir, want.dir) << spec;
    EXPECT_EQ(got.weight, want.weight) << spec;
  }
  MixSource s;
  EXPECT_TRUE(ParseMixSource("http://host:8080/en:0", &s).IsInvalidArgument());
}

// "--data en:inf" was taken: every share became NaN and the plan asked for 2^64 records,
// "internal error: vector::reserve". Every weight is checked where it is parsed, and again where
// a MixOptions (C++ or Python) reaches the loader.
TEST(MixSourceSpec, WeightsOutOfRangeAreRefusedNamingTheSpec) {
  for (const std::string w : {"inf", "-inf", "nan", "1e400", "1e13", "-2", "0"}) {
    MixSource s;
    const Status st = ParseMixSource("/data/en:" + w, &s);
    ASSERT_TRUE(st.IsInvalidArgument()) << w << ": " << st.ToString();
    EXPECT_NE(st.message().find("--data /data/en:" + w + ": the weight"), std::string::npos)
        << st.ToString();
  }
  MixSource s;
  ASSERT_OK(ParseMixSource("/data/en:1e12", &s));
  EXPECT_TRUE(CheckMixWeight(std::numeric_limits<double>::infinity(), "x").IsInvalidArgument());
  EXPECT_TRUE(CheckMixWeight(std::nan(""), "x").IsInvalidArgument());
}

TEST(MixPlan, CountsFollowTheWeightsExactly) {
  EXPECT_EQ(MixCounts({1, 2, 3}, 600), (std::vector<uint64_t>{100, 200, 300}));
  EXPECT_EQ(MixCounts({1, 1, 1}, 10), (std::vector<uint64_t>{4, 3, 3}));  // ties: earlier first
  const std::vector<double> w = {0.7, 2.5, 0.01, 1.3};
  for (uint64_t total : {1u, 7u, 1000u, 12345u}) {
    const std::vector<uint64_t> c = MixCounts(w, total);
    uint64_t sum = 0;
    for (size_t i = 0; i < w.size(); ++i) {
      sum += c[i];
      EXPECT_LT(std::abs(static_cast<double>(c[i]) - total * w[i] / 4.51), 1.0) << total;
    }
    EXPECT_EQ(sum, total);
  }
}

// In the first k records of the stream, source 1's share is a sample without replacement from
// the epoch's labels: mean p, standard deviation sqrt(p (1 - p) / k) at most. Over 20 seeds and
// three prefixes (ending at window ends) every share is within 4 standard deviations (a false alarm
// about 1 in 10^4 per check), and the shares average to p within 4 standard deviations of the mean
// of 20.
TEST(MixPlan, ProportionsOfEveryPrefixStayWithinTheirBoundOverSeeds) {
  const IndexColumns ix = TwoSources(12, 6, 3);
  const std::vector<double> weights = {1, 3};
  const uint64_t total = 2000;  // more than the records: both sources repeat
  const double p = 0.75;
  for (const uint64_t k : {96u, 512u, 1024u}) {  // window ends (shuffle_window 32)
    const double sd = std::sqrt(p * (1 - p) / k);
    double sum = 0;
    for (uint64_t seed = 1; seed <= 20; ++seed) {
      std::vector<uint64_t> stream, records, repeated;
      ASSERT_OK(
          MixedRecordStream(ix, weights, total, Batching(), seed, 0, &stream, &records, &repeated));
      ASSERT_EQ(stream.size(), total);
      EXPECT_EQ(records, (std::vector<uint64_t>{500, 1500}));
      uint64_t ones = 0;
      for (size_t i = 0; i < k; ++i) ones += SourceOf(ix, stream[i]);
      const double share = static_cast<double>(ones) / k;
      EXPECT_LT(std::abs(share - p), 4 * sd) << "seed " << seed << ", first " << k;
      sum += share;
    }
    EXPECT_LT(std::abs(sum / 20 - p), 4 * sd / std::sqrt(20.0)) << "first " << k;
  }
}

TEST(MixPlan, SourcesAreDrawnWithoutReplacementUntilTheyRunOut) {
  const IndexColumns ix = TwoSources(10, 3, 7);
  const uint64_t small = ix.source_first_record[1], large = ix.num_records() - small;
  ASSERT_GT(large, small);
  // Source 0 gets 2.5 times its records, source 1 half of its own.
  const uint64_t want0 = small * 5 / 2, want1 = large / 2;
  const std::vector<double> weights = {static_cast<double>(want0), static_cast<double>(want1)};
  std::vector<uint64_t> stream, records, repeated;
  ASSERT_OK(MixedRecordStream(ix, weights, want0 + want1, Batching(), 4, 2, &stream, &records,
                              &repeated));
  EXPECT_EQ(records, (std::vector<uint64_t>{want0, want1}));
  EXPECT_EQ(repeated, (std::vector<uint64_t>{want0 - small, 0}));
  std::map<uint64_t, int> seen;
  for (uint64_t r : stream) seen[r]++;
  for (const auto& [r, n] : seen) {
    if (SourceOf(ix, r) == 0) {
      EXPECT_TRUE(n == 2 || n == 3) << r << " drawn " << n << " times";
    } else {
      EXPECT_EQ(n, 1) << r;
    }
  }
  size_t distinct0 = 0;
  for (const auto& [r, n] : seen) distinct0 += SourceOf(ix, r) == 0;
  EXPECT_EQ(distinct0, small);  // every record of the small source before any repeat
}

TEST(MixPlan, IsAPureFunctionOfSeedAndEpoch) {
  const IndexColumns ix = TwoSources(8, 4, 2);
  EpochPlan a, b, c, d;
  ASSERT_OK(MakeMixedPlan(ix, {1, 2}, 300, Batching(), 9, 1, {}, 0, 1, &a));
  ASSERT_OK(MakeMixedPlan(ix, {1, 2}, 300, Batching(), 9, 1, {}, 0, 1, &b));
  ASSERT_OK(MakeMixedPlan(ix, {1, 2}, 300, Batching(), 9, 2, {}, 0, 1, &c));
  ASSERT_OK(MakeMixedPlan(ix, {1, 2}, 300, Batching(), 10, 1, {}, 0, 1, &d));
  EXPECT_EQ(a.records, b.records);
  EXPECT_NE(a.records, c.records);
  EXPECT_NE(a.records, d.records);
  EXPECT_FALSE(MakeMixedPlan(ix, {1, 0}, 300, Batching(), 9, 1, {}, 0, 1, &a).ok());
}

// Every rank's records of a mixed plan, batches [from, to) of each.
std::multiset<uint64_t> Taken(const IndexColumns& ix, const std::vector<WorldSegment>& earlier,
                              int world, size_t from, size_t to, size_t* per_rank = nullptr) {
  std::multiset<uint64_t> out;
  for (int r = 0; r < world; ++r) {
    EpochPlan p;
    EXPECT_OK(MakeMixedPlan(ix, {2, 1}, 900, Batching(), 5, 3, earlier, r, world, &p));
    if (per_rank != nullptr) *per_rank = p.batches.size();
    for (size_t j = from; j < std::min(to, p.batches.size()); ++j)
      out.insert(p.records.begin() + p.batches[j].first,
                 p.records.begin() + p.batches[j].first + p.batches[j].rows);
  }
  return out;
}

TEST(MixPlan, ElasticResumeOfAMixtureCoversItExactly) {
  const IndexColumns ix = TwoSources(9, 4, 11);
  const std::multiset<uint64_t> whole = Taken(ix, {}, 1, 0, SIZE_MAX);
  ASSERT_EQ(whole.size(), 900u);
  for (const auto& [w, w2] : std::vector<std::pair<int, int>>{{2, 3}, {4, 3}, {3, 1}}) {
    size_t n = 0;
    Taken(ix, {}, w, 0, 0, &n);
    for (const size_t at : {size_t{1}, n / 2, n - 1}) {
      std::multiset<uint64_t> all = Taken(ix, {}, w, 0, at);
      const std::multiset<uint64_t> rest = Taken(ix, {{w, at}}, w2, 0, SIZE_MAX);
      all.insert(rest.begin(), rest.end());
      EXPECT_EQ(all, whole) << w << " -> " << w2 << " at " << at;
    }
  }
}

// The Loader over two small audio datasets.
class MixLoader : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new sluice::testing::TempDir();
    loader::testing::AudioDatasetSpec a, b;
    a.records = 30;
    b.records = 70;
    b.seed = 2;
    for (const char* d : {"a", "b", "b8k", "bfeat"})
      std::filesystem::create_directories(dir_->Join(d));
    loader::testing::WriteAudioDataset(dir_->Join("a"), a);
    loader::testing::WriteAudioDataset(dir_->Join("b"), b);
    b.sample_rate = 8000;
    loader::testing::WriteAudioDataset(dir_->Join("b8k"), b);
    b.sample_rate = 16000;
    b.precomputed = true;
    loader::testing::WriteAudioDataset(dir_->Join("bfeat"), b);
  }
  static void TearDownTestSuite() { delete dir_; }

  static MixOptions Mix() {
    MixOptions m;
    m.sources = {{dir_->Join("a"), 1.0}, {dir_->Join("b"), 1.0}};
    m.epoch_records = 120;  // 60 each: source a runs out and repeats 30
    return m;
  }
  static LoaderOptions Options(int rank = 0, int world = 1) {
    LoaderOptions o;
    o.threads = 2;
    o.seed = 3;
    o.batching.max_frames = 600;
    o.batching.shuffle_window = 16;
    o.rank = rank;
    o.world = world;
    return o;
  }
  struct Run {
    std::vector<uint64_t> digests;
    std::multiset<uint64_t> ids;
    EpochStats stats;
    ResumeState end;
  };
  static Run Epoch(const LoaderOptions& o, const ResumeState& from, size_t take = SIZE_MAX) {
    Run run;
    std::unique_ptr<Loader> l;
    EXPECT_OK(Loader::Open(Mix(), o, &l));
    if (l == nullptr) return run;
    EXPECT_OK(l->Start(from));
    const Batch* b;
    for (size_t k = 0; k < take; ++k) {
      EXPECT_OK(l->Next(&b));
      if (b == nullptr) break;
      run.digests.push_back(DigestOf(*b));
      run.ids.insert(b->record_ids().begin(), b->record_ids().end());
    }
    run.stats = l->stats();
    run.end = l->state();
    return run;
  }
  static sluice::testing::TempDir* dir_;
};
sluice::testing::TempDir* MixLoader::dir_ = nullptr;

TEST_F(MixLoader, CountsRowsPerSourceAndRepeatsWhereOneRunsOut) {
  const Run r = Epoch(Options(), ResumeState{0});
  ASSERT_EQ(r.stats.sources.size(), 2u);
  EXPECT_EQ(r.ids.size(), 120u);
  EXPECT_EQ(r.stats.sources[0].records, 60u);
  EXPECT_EQ(r.stats.sources[1].records, 60u);
  EXPECT_EQ(r.stats.sources[0].repeated, 30u);  // 30 records, drawn twice each
  EXPECT_EQ(r.stats.sources[1].repeated, 0u);
  EXPECT_EQ(r.stats.sources[0].rows, 60u);
  EXPECT_EQ(r.stats.sources[1].rows, 60u);
  const nlohmann::json j = r.stats.ToJson();
  EXPECT_EQ(j.at("sources").at(0).at("repeated"), 30);
  // Record ids number source a's records first: 0..29, then b's 30..99.
  for (uint64_t id = 0; id < 30; ++id) EXPECT_EQ(r.ids.count(id), 2u) << id;
  EXPECT_EQ(Epoch(Options(), ResumeState{0}).digests, r.digests);  // deterministic
  EXPECT_NE(Epoch(Options(), ResumeState{1}).digests, r.digests);
}

TEST_F(MixLoader, ResumedMixtureEqualsTheUninterruptedRun) {
  const Run whole = Epoch(Options(), ResumeState{2});
  ASSERT_GT(whole.digests.size(), 4u);
  for (const uint64_t at : {uint64_t{1}, uint64_t(whole.digests.size() / 2)}) {
    ResumeState state;
    ASSERT_OK(ResumeState::FromJson(Epoch(Options(), ResumeState{2}, at).end.ToJson(), &state));
    const Run rest = Epoch(Options(), state);
    EXPECT_EQ(rest.digests, std::vector<uint64_t>(whole.digests.begin() + at, whole.digests.end()))
        << "at " << at;
  }
}

TEST_F(MixLoader, ElasticResumeOfAMixtureCoversItExactly) {
  const std::multiset<uint64_t> whole = Epoch(Options(), ResumeState{1}).ids;
  std::multiset<uint64_t> ids;
  ResumeState saved;
  for (int r = 0; r < 2; ++r) {
    const Run part = Epoch(Options(r, 2), ResumeState{1}, 2);
    ids.insert(part.ids.begin(), part.ids.end());
    saved = part.end;
  }
  EXPECT_EQ(saved, (ResumeState{1, 2, 2}));
  for (int r = 0; r < 3; ++r) {
    const Run part = Epoch(Options(r, 3), saved);
    ids.insert(part.ids.begin(), part.ids.end());
  }
  EXPECT_EQ(ids, whole);
}

TEST_F(MixLoader, SourcesThatDisagreeAreRefusedNamingBoth) {
  std::unique_ptr<Loader> l;
  MixOptions m = Mix();
  m.sources[1].dir = dir_->Join("b8k");
  Status st = Loader::Open(m, Options(), &l);
  EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
  for (const std::string& want : {dir_->Join("a"), dir_->Join("b8k"), std::string("sample rate")})
    EXPECT_NE(st.ToString().find(want), std::string::npos) << st.ToString();
  // Stored features used for one source and not the other: refused; computed by the loader
  // for both: accepted.
  m.sources[1].dir = dir_->Join("bfeat");
  st = Loader::Open(m, Options(), &l);
  EXPECT_NE(st.ToString().find("precomputed features"), std::string::npos) << st.ToString();
  LoaderOptions computed = Options();
  computed.use_precomputed = false;
  EXPECT_OK(Loader::Open(m, computed, &l));
  m = Mix();
  m.sources[0].weight = 0;
  EXPECT_TRUE(Loader::Open(m, Options(), &l).IsInvalidArgument());
  // What Python's float("inf") hands the loader.
  m.sources[0].weight = std::numeric_limits<double>::infinity();
  st = Loader::Open(m, Options(), &l);
  EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
  EXPECT_NE(st.ToString().find("the weight inf is out of range"), std::string::npos)
      << st.ToString();
}

}  // namespace
}  // namespace sluice::loader
