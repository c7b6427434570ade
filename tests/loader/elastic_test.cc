// Elastic resume (resume.h, plan.h step 4): an epoch saved at W ranks and continued at W' holds
// every record not yet consumed exactly once, with equal batch counts, as a pure function of the
// state; chained changes too; and the saved state says where it was taken.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "assert_ok.h"
#include "loader/loader.h"
#include "loader/plan.h"
#include "loader/resume.h"
#include "synthetic_index.h"
#include "test_dataset.h"
#include "test_util.h"

namespace sluice::loader {
namespace {

using testing::MakeSyntheticIndex;

BatchingOptions Batching() {
  BatchingOptions opt;
  opt.max_frames = 3000;
  opt.shuffle_window = 64;
  return opt;
}

// One stretch of an epoch as its ranks ran it: the plan of every rank.
struct Stretch {
  std::vector<EpochPlan> ranks;
  size_t per_rank() const { return ranks[0].batches.size(); }
};

Stretch PlanStretch(const IndexColumns& ix, const std::vector<WorldSegment>& earlier, int world) {
  Stretch s;
  s.ranks.resize(world);
  for (int r = 0; r < world; ++r)
    EXPECT_OK(MakeEpochPlan(ix, Batching(), 42, 3, earlier, r, world, &s.ranks[r]));
  return s;
}

// Records of batches [from, to) of every rank, rank after rank (the global order).
std::vector<uint64_t> Records(const Stretch& s, size_t from, size_t to) {
  std::vector<uint64_t> out;
  for (const EpochPlan& p : s.ranks)
    for (size_t j = from; j < std::min(to, p.batches.size()); ++j)
      out.insert(out.end(), p.records.begin() + p.batches[j].first,
                 p.records.begin() + p.batches[j].first + p.batches[j].rows);
  return out;
}

// Every record of the index once: sorted ids 0..n-1.
void ExpectEachRecordOnce(std::vector<uint64_t> seen, size_t n, const std::string& where) {
  std::sort(seen.begin(), seen.end());
  std::vector<uint64_t> want(n);
  std::iota(want.begin(), want.end(), uint64_t{0});
  EXPECT_EQ(seen, want) << where;
}

TEST(ElasticPlan, ConsumedPlusRestIsTheEpochExactlyForEveryWorldChange) {
  const IndexColumns ix = MakeSyntheticIndex(9, 4);
  // The uninterrupted run's global record order (the same at every world size).
  const std::vector<uint64_t> global = Records(PlanStretch(ix, {}, 1), 0, SIZE_MAX);
  for (const auto& [w, w2] :
       std::vector<std::pair<int, int>>{{1, 2}, {2, 1}, {2, 3}, {4, 3}, {3, 4}}) {
    const Stretch before = PlanStretch(ix, {}, w);
    const size_t n = before.per_rank();
    ASSERT_GT(n, 4u);
    for (const size_t at : {size_t{0}, size_t{1}, n / 2, n - 1, n}) {
      const std::string where = std::to_string(w) + " -> " + std::to_string(w2) + " ranks at " +
                                std::to_string(at) + " of " + std::to_string(n);
      const std::vector<uint64_t> consumed = Records(before, 0, at);
      const Stretch after = PlanStretch(ix, {{w, at}}, w2);
      const uint64_t repeated = after.ranks[0].repeated_records;
      for (const EpochPlan& p : after.ranks) {
        EXPECT_EQ(p.batches.size(), after.per_rank()) << where;
        EXPECT_EQ(p.consumed_records, consumed.size()) << where;
        EXPECT_EQ(p.repeated_records, repeated) << where;
      }
      // The rest keeps the uninterrupted run's global order of the records left; repeats (the
      // tail rule: fewer single-record batches left than the next multiple of the world) come
      // last, fewer than the ranks, and only of records left.
      std::vector<uint64_t> left;
      for (uint64_t r : global)
        if (std::find(consumed.begin(), consumed.end(), r) == consumed.end()) left.push_back(r);
      std::vector<uint64_t> rest = Records(after, 0, SIZE_MAX);
      EXPECT_LT(repeated, static_cast<uint64_t>(w2)) << where;
      ASSERT_EQ(rest.size(), left.size() + repeated) << where;
      for (size_t k = left.size(); k < rest.size(); ++k)
        EXPECT_NE(std::find(left.begin(), left.end(), rest[k]), left.end()) << where;
      rest.resize(left.size());
      EXPECT_EQ(rest, left) << where;
      std::vector<uint64_t> all = consumed;
      all.insert(all.end(), rest.begin(), rest.end());
      ExpectEachRecordOnce(all, ix.num_records(), where);
      if (at == n) {
        EXPECT_EQ(after.per_rank(), 0u) << where;  // the epoch was over: nothing left
      }
    }
  }
}

TEST(ElasticPlan, IsAPureFunctionOfTheState) {
  const IndexColumns ix = MakeSyntheticIndex(6, 8);
  const Stretch a = PlanStretch(ix, {{4, 3}}, 3), b = PlanStretch(ix, {{4, 3}}, 3);
  const Stretch c = PlanStretch(ix, {{4, 2}}, 3), d = PlanStretch(ix, {{2, 3}}, 3);
  for (int r = 0; r < 3; ++r) EXPECT_EQ(a.ranks[r].records, b.ranks[r].records) << r;
  EXPECT_NE(Records(a, 0, SIZE_MAX), Records(c, 0, SIZE_MAX));
  EXPECT_NE(Records(a, 0, SIZE_MAX), Records(d, 0, SIZE_MAX));
}

TEST(ElasticPlan, ChainedChangesCoverTheEpochExactly) {
  const IndexColumns ix = MakeSyntheticIndex(9, 5);
  for (const std::vector<int>& worlds :
       std::vector<std::vector<int>>{{2, 3, 4}, {4, 1, 3}, {3, 2, 3}, {1, 4, 2, 3}}) {
    std::vector<WorldSegment> earlier;
    std::vector<uint64_t> consumed;
    std::string where = "worlds";
    for (size_t i = 0; i + 1 < worlds.size(); ++i) {
      const Stretch s = PlanStretch(ix, earlier, worlds[i]);
      const uint64_t take = s.per_rank() / 3 + 1;  // a third of what is left, at least one
      const std::vector<uint64_t> taken = Records(s, 0, take);
      consumed.insert(consumed.end(), taken.begin(), taken.end());
      earlier.push_back({worlds[i], take});
      where += " " + std::to_string(worlds[i]) + "x" + std::to_string(take);
    }
    const Stretch last = PlanStretch(ix, earlier, worlds.back());
    for (const EpochPlan& p : last.ranks) {
      EXPECT_EQ(p.batches.size(), last.per_rank()) << where;
      EXPECT_EQ(p.consumed_records, consumed.size()) << where;
    }
    std::vector<uint64_t> all = consumed;
    const std::vector<uint64_t> rest = Records(last, 0, SIZE_MAX);
    all.insert(all.end(), rest.begin(), rest.end());
    ExpectEachRecordOnce(all, ix.num_records(), where);
  }
}

TEST(ElasticPlan, FewerRecordsLeftThanRanksRepeatsThemAndSaysSo) {
  const IndexColumns ix = MakeSyntheticIndex(6, 8);
  const Stretch before = PlanStretch(ix, {}, 1);
  const size_t n = before.per_rank();
  // One batch left; split down to single records, fewer of them than 64 ranks.
  const Stretch after = PlanStretch(ix, {{1, n - 1}}, 64);
  const std::vector<uint64_t> left = Records(before, n - 1, n);
  ASSERT_LT(left.size(), 64u);
  EXPECT_EQ(after.per_rank(), 1u);
  EXPECT_EQ(after.ranks[0].repeated_records, 64 - left.size());
  std::map<uint64_t, int> seen;
  for (uint64_t r : Records(after, 0, SIZE_MAX)) seen[r]++;
  EXPECT_EQ(seen.size(), left.size());  // only the records left, each at least once
  for (uint64_t r : left) EXPECT_GE(seen[r], 1) << r;
}

TEST(ElasticPlan, RejectsAStretchThatDoesNotFitThePlan) {
  const IndexColumns ix = MakeSyntheticIndex(4, 2);
  const Stretch s = PlanStretch(ix, {}, 2);
  EpochPlan p;
  const Status st = MakeEpochPlan(ix, Batching(), 42, 3, {{2, s.per_rank() + 1}}, 0, 3, &p);
  EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
  EXPECT_NE(st.ToString().find("world size 2"), std::string::npos) << st.ToString();
  EXPECT_TRUE(MakeEpochPlan(ix, Batching(), 42, 3, {{0, 1}}, 0, 3, &p).IsInvalidArgument());
}

TEST(ResumeStateJson, CarriesWorldAndHistoryAndReadsOldStates) {
  ResumeState s{4, 17, 3, {{8, 120}, {6, 5}}}, back;
  ASSERT_OK(ResumeState::FromJson(s.ToJson(), &back));
  EXPECT_EQ(back, s);
  EXPECT_LT(s.ToJson().size(), 120u) << s.ToJson();
  // A state from before elastic resume means "the same world".
  ASSERT_OK(ResumeState::FromJson("{\"epoch\": 2, \"batches\": 9}", &back));
  EXPECT_EQ(back, (ResumeState{2, 9}));
  EXPECT_EQ(back.world, 0);
  EXPECT_EQ((ResumeState{2, 9}.ToJson()), "{\"batches\":9,\"epoch\":2}");
  for (const char* bad : {"{\"epoch\": 1, \"batches\": 2, \"world\": 0}",
                          "{\"epoch\": 1, \"batches\": 2, \"world\": -3}",
                          "{\"epoch\": 1, \"batches\": 2, \"earlier\": {}}",
                          "{\"epoch\": 1, \"batches\": 2, \"earlier\": [{\"world\": 2}]}",
                          "{\"epoch\": 1, \"batches\": 2, \"earlier\": [[2, 3]]}"})
    EXPECT_TRUE(ResumeState::FromJson(bad, &back).IsInvalidArgument()) << bad;
  ResumeState longest{1, 1, 2};
  longest.earlier.assign(ResumeState::kMaxSegments, WorldSegment{3, 1000000});
  ASSERT_OK(ResumeState::FromJson(longest.ToJson(), &back));
  EXPECT_LT(longest.ToJson().size(), 4096u);  // "a few KB at most"
  longest.earlier.push_back({3, 1});
  const Status st = ResumeState::FromJson(longest.ToJson(), &back);
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_NE(st.ToString().find("over the limit"), std::string::npos) << st.ToString();
}

// A state is written by hand or by another program often enough (a checkpoint's JSON, a
// Python dict): the error names the field and what it must hold.
TEST(ResumeStateJson, BadFieldIsNamedWithWhatItMustHold) {
  ResumeState back;
  const std::pair<const char*, const char*> cases[] = {
      {"{\"epoch\": 1, \"batches\": \"3\"}", "state['batches']: expected an int >= 0, got \"3\""},
      {"{\"epoch\": 1, \"batch\": 3}", "state['batches']: missing"},
      {"{\"epoch\": -1, \"batches\": 0}", "state['epoch']: expected an int >= 0, got -1"},
      {"{\"epoch\": 1, \"batches\": 0, \"world\": 0}",
       "state['world']: expected a rank count, an int >= 1, got 0"},
      {"{\"epoch\": 1, \"batches\": 2, \"earlier\": [{\"world\": 2, \"batches\": 1.5}]}",
       "state['earlier'][0]['batches']: expected an int >= 0, got 1.5"},
      {"{\"epoch\": 1, \"batches\": 2, \"earlier\": [{\"batches\": 1}]}",
       "state['earlier'][0]['world']: missing"},
      {"[1, 2]", "state: expected an object"},
  };
  for (const auto& [text, expected] : cases) {
    const Status st = ResumeState::FromJson(text, &back);
    EXPECT_TRUE(st.IsInvalidArgument()) << text;
    EXPECT_NE(st.message().find(expected), std::string::npos) << st.ToString();
  }
}

// The Loader end to end: states saved by W loaders, resumed by W' loaders.
class ElasticLoader : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new sluice::testing::TempDir();
    loader::testing::AudioDatasetSpec spec;
    spec.records = 90;
    loader::testing::WriteAudioDataset(dir_->path(), spec);
  }
  static void TearDownTestSuite() { delete dir_; }

  static LoaderOptions Options(int rank, int world) {
    LoaderOptions o;
    o.threads = 1;
    o.seed = 5;
    o.batching.max_frames = 400;
    o.batching.shuffle_window = 16;
    o.rank = rank;
    o.world = world;
    return o;
  }
  // Per rank, the record ids `world` ranks take from `state` on, `take` batches each (all:
  // SIZE_MAX), and the state they all end in (checked equal across ranks).
  using PerRank = std::vector<std::vector<uint64_t>>;
  static PerRank Run(int world, const ResumeState& state, size_t take, ResumeState* end,
                     size_t* per_rank = nullptr) {
    PerRank ids(world);
    for (int r = 0; r < world; ++r) {
      std::unique_ptr<Loader> l;
      EXPECT_OK(Loader::Open(dir_->path(), Options(r, world), &l));
      if (l == nullptr) return ids;
      EXPECT_OK(l->Start(state));
      if (per_rank != nullptr) *per_rank = l->num_batches();
      const Batch* b;
      for (size_t k = 0; k < take; ++k) {
        EXPECT_OK(l->Next(&b));
        if (b == nullptr) break;
        ids[r].insert(ids[r].end(), b->record_ids().begin(), b->record_ids().end());
      }
      if (r == 0) *end = l->state();
      EXPECT_EQ(l->state(), *end) << "rank " << r;
    }
    return ids;
  }
  static std::vector<uint64_t> Flat(const PerRank& ids) {
    std::vector<uint64_t> out;
    for (const auto& v : ids) out.insert(out.end(), v.begin(), v.end());
    return out;
  }
  static sluice::testing::TempDir* dir_;
};
sluice::testing::TempDir* ElasticLoader::dir_ = nullptr;

TEST_F(ElasticLoader, ResumesAtAnotherWorldWithTheRestOfTheEpochOnce) {
  for (const auto& [w, w2] : std::vector<std::pair<int, int>>{{2, 3}, {3, 1}}) {
    ResumeState saved, end;
    size_t per_rank = 0;
    std::vector<uint64_t> ids = Flat(Run(w, ResumeState{1}, 2, &saved, &per_rank));
    ASSERT_GT(per_rank, 3u);
    // Through JSON, as a checkpoint keeps it.
    ASSERT_OK(ResumeState::FromJson(saved.ToJson(), &saved));
    EXPECT_EQ(saved, (ResumeState{1, 2, w}));
    size_t per_rank2 = 0;
    const std::vector<uint64_t> rest = Flat(Run(w2, saved, SIZE_MAX, &end, &per_rank2));
    ids.insert(ids.end(), rest.begin(), rest.end());
    ExpectEachRecordOnce(ids, 90, std::to_string(w) + " -> " + std::to_string(w2));
    EXPECT_EQ(end, (ResumeState{1, per_rank2, w2, {{w, 2}}})) << end.ToJson();
    // Saved at the epoch's end and resumed at yet another world size: nothing is left, and
    // every rank says so at once (0 batches, the same count on every rank).
    ResumeState after_end;
    size_t none = 1;
    EXPECT_TRUE(Flat(Run(w + w2, end, SIZE_MAX, &after_end, &none)).empty());
    EXPECT_EQ(none, 0u);
  }
}

TEST_F(ElasticLoader, SameWorldResumeOfAResumedEpochEqualsItsTail) {
  ResumeState saved, mid, end;
  std::vector<uint64_t> ids = Flat(Run(2, ResumeState{0}, 3, &saved));
  const PerRank whole = Run(3, saved, SIZE_MAX, &end);
  // Stopped again after one batch at 3 ranks, resumed at 3 ranks: each rank's batches are the
  // ones it would have had.
  const PerRank first = Run(3, saved, 1, &mid);
  EXPECT_EQ(mid, (ResumeState{0, 1, 3, {{2, 3}}}));
  ASSERT_OK(ResumeState::FromJson(mid.ToJson(), &mid));
  const PerRank tail = Run(3, mid, SIZE_MAX, &end);
  for (int r = 0; r < 3; ++r) {
    std::vector<uint64_t> joined = first[r];
    joined.insert(joined.end(), tail[r].begin(), tail[r].end());
    EXPECT_EQ(joined, whole[r]) << "rank " << r;
  }
  // And a third world size: 2 -> 3 -> 4 covers the epoch exactly.
  const std::vector<uint64_t> taken = Flat(first), last = Flat(Run(4, mid, SIZE_MAX, &end));
  ids.insert(ids.end(), taken.begin(), taken.end());
  ids.insert(ids.end(), last.begin(), last.end());
  ExpectEachRecordOnce(ids, 90, "2 -> 3 -> 4");
  EXPECT_EQ(end.earlier, (std::vector<WorldSegment>{{2, 3}, {3, 1}})) << end.ToJson();
}

// Packed epochs resume on another world too (every mode and world change: pack_fit_test.cc).
TEST(ElasticPacked, AnotherWorldResumesThePackedEpoch) {
  sluice::testing::TempDir dir;
  loader::testing::WriteTokenDataset(dir.path(), 40);
  LoaderOptions o;
  o.threads = 1;
  o.packing.seq_len = 16;
  o.packing.batch_size = 2;
  o.world = 3;
  std::unique_ptr<Loader> l;
  ASSERT_OK(Loader::Open(dir.path(), o, &l));
  ASSERT_OK(l->Start(ResumeState{0, 1, 2}));
  EXPECT_EQ(l->state().earlier, (std::vector<WorldSegment>{{2, 1}}));
  EXPECT_GT(l->stats().consumed_sequences, 0u);
  EXPECT_OK(l->Start(ResumeState{0, 1, 3}));  // its own world resumes
}

}  // namespace
}  // namespace sluice::loader
