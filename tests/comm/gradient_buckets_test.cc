// Bucketing logic with a recording lane (one process): buckets go out as soon as complete, in
// index order whatever order tensors finish in, and misuse is an error.
#include "comm/gradient_buckets.h"
#include "assert_ok.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

namespace sluice::comm {
namespace {

class RecordingLane : public ReduceLane {
 public:
  explicit RecordingLane(const float* base) : base_(base) {}
  Status Submit(float* data, size_t count) override {
    submitted.emplace_back(static_cast<size_t>(data - base_), count);
    return Status::OK();
  }
  Status Wait() override {
    ++waits;
    return Status::OK();
  }
  std::vector<std::pair<size_t, size_t>> submitted;  // (offset, count)
  int waits = 0;

 private:
  const float* base_;
};

TEST(GradientBuckets, SubmitsEachBucketAsSoonAsBackwardCompletesIt) {
  std::vector<float> grads(25);
  RecordingLane lane(grads.data());
  GradientBuckets b(grads.data(), grads.size(), 6, &lane);
  EXPECT_EQ(b.num_buckets(), 5u);
  // Tensors in reverse layer order, as backward finishes them.
  const size_t sizes[] = {5, 3, 8, 2, 7};
  size_t offset = 0;
  std::vector<size_t> submitted_after;
  for (size_t s : sizes) {
    ASSERT_OK(b.MarkReady(offset, s));
    offset += s;
    submitted_after.push_back(lane.submitted.size());
  }
  // [0,5): none; [5,8) completes bucket 0; [8,16) completes 1; [16,18) completes 2; the rest 3, 4.
  EXPECT_EQ(submitted_after, (std::vector<size_t>{0, 1, 2, 3, 5}));
  ASSERT_EQ(lane.submitted.size(), 5u);
  EXPECT_EQ(lane.submitted[0], std::make_pair(size_t{0}, size_t{6}));
  EXPECT_EQ(lane.submitted[4], std::make_pair(size_t{24}, size_t{1}));
  ASSERT_OK(b.Finish());
  EXPECT_EQ(lane.waits, 1);
}

TEST(GradientBuckets, BucketsGoOutInIndexOrderWhateverOrderTensorsFinish) {
  std::vector<float> grads(12);
  RecordingLane lane(grads.data());
  GradientBuckets b(grads.data(), grads.size(), 4, &lane);
  ASSERT_OK(b.MarkReady(8, 4));  // bucket 2 complete first
  ASSERT_OK(b.MarkReady(4, 4));  // then bucket 1
  EXPECT_TRUE(lane.submitted.empty()) << "bucket 0 is not done: nothing may go out yet";
  ASSERT_OK(b.MarkReady(0, 4));
  ASSERT_EQ(lane.submitted.size(), 3u);
  EXPECT_EQ(b.submitted(), (std::vector<uint32_t>{0, 1, 2}));
  EXPECT_EQ(lane.submitted[0].first, 0u);
  EXPECT_EQ(lane.submitted[1].first, 4u);
  EXPECT_EQ(lane.submitted[2].first, 8u);
  ASSERT_OK(b.Finish());
  // The next step starts clean.
  EXPECT_TRUE(b.submitted().empty());
  ASSERT_OK(b.MarkReady(0, 12));
  EXPECT_EQ(lane.submitted.size(), 6u);
  ASSERT_OK(b.Finish());
}

TEST(GradientBuckets, MisuseIsAnError) {
  std::vector<float> grads(10);
  RecordingLane lane(grads.data());
  GradientBuckets b(grads.data(), grads.size(), 4, &lane);
  EXPECT_TRUE(b.MarkReady(8, 3).IsInvalidArgument());
  ASSERT_OK(b.MarkReady(0, 4));
  EXPECT_TRUE(b.MarkReady(2, 2).IsInvalidArgument()) << "marked twice";
  const Status st = b.Finish();
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_NE(st.message().find("4 of 10"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace sluice::comm
