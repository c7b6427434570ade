// Per-utterance and global CMVN.
#include "features/cmvn.h"
#include "assert_ok.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

namespace sluice::features {
namespace {

std::vector<float> Matrix(int frames, int dim) {
  std::vector<float> m(static_cast<size_t>(frames) * dim);
  for (int f = 0; f < frames; ++f) {
    for (int j = 0; j < dim; ++j)
      m[f * dim + j] = 3.0f * j + std::sin(0.1f * f * (j + 1)) * (j + 1);
  }
  return m;
}

void ExpectColumnsStandardised(const std::vector<float>& m, int frames, int dim, bool unit_var) {
  for (int j = 0; j < dim; ++j) {
    double sum = 0, sum_sq = 0;
    for (int f = 0; f < frames; ++f) sum += m[f * dim + j];
    const double mean = sum / frames;
    for (int f = 0; f < frames; ++f) sum_sq += (m[f * dim + j] - mean) * (m[f * dim + j] - mean);
    EXPECT_NEAR(mean, 0.0, 1e-5) << j;
    if (unit_var) {
      EXPECT_NEAR(sum_sq / frames, 1.0, 1e-4) << j;
    }
  }
}

TEST(CmvnTest, UtteranceCmvnCentresAndScalesEachColumn) {
  auto m = Matrix(200, 5);
  UtteranceCmvn(m.data(), 200, 5, /*norm_vars=*/true);
  ExpectColumnsStandardised(m, 200, 5, true);
  auto centred = Matrix(200, 5);
  const auto original = centred;
  UtteranceCmvn(centred.data(), 200, 5, /*norm_vars=*/false);
  ExpectColumnsStandardised(centred, 200, 5, false);
  // Means only: the spread of each column is kept.
  EXPECT_NEAR(centred[5 + 4] - centred[4], original[5 + 4] - original[4], 1e-4);
}

TEST(CmvnTest, ConstantColumnIsOnlyCentred) {
  std::vector<float> m(30, 4.0f);
  UtteranceCmvn(m.data(), 10, 3, true);
  for (float v : m) EXPECT_EQ(v, 0.0f);
}

TEST(CmvnTest, GlobalStatsFromChunksEqualOneUtterance) {
  const auto m = Matrix(300, 4);
  CmvnStats all(4), first(4), second(4);
  all.Accumulate(m.data(), 300);
  first.Accumulate(m.data(), 120);
  second.Accumulate(m.data() + 120 * 4, 180);
  ASSERT_OK(first.Merge(second));
  EXPECT_EQ(first.count(), 300);
  for (int j = 0; j < 4; ++j) EXPECT_NEAR(first.sum()[j], all.sum()[j], 1e-9);
  GlobalCmvn g;
  ASSERT_OK(GlobalCmvn::FromStats(first, true, 1e-10, &g));
  auto global = m;
  ASSERT_OK(g.Apply(global.data(), 300, 4));
  auto utterance = m;
  UtteranceCmvn(utterance.data(), 300, 4, true);
  for (size_t i = 0; i < m.size(); ++i) EXPECT_NEAR(global[i], utterance[i], 1e-4);
}

TEST(CmvnTest, ErrorsNameTheMismatch) {
  CmvnStats a(3), b(4);
  EXPECT_TRUE(a.Merge(b).IsInvalidArgument());
  GlobalCmvn g;
  EXPECT_TRUE(GlobalCmvn::FromStats(a, true, 0, &g).IsInvalidArgument());  // no frames
  ASSERT_OK(GlobalCmvn::FromMeanStd({1, 2}, {1, 4}, &g));
  std::vector<float> x = {3, 6};
  ASSERT_OK(g.Apply(x.data(), 1, 2));
  EXPECT_FLOAT_EQ(x[0], 2.0f);
  EXPECT_FLOAT_EQ(x[1], 1.0f);
  Status s = g.Apply(x.data(), 1, 3);
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(s.message().find("dim 3"), std::string::npos) << s.message();
  EXPECT_TRUE(GlobalCmvn::FromMeanStd({1}, {0}, &g).IsInvalidArgument());
  EXPECT_TRUE(GlobalCmvn::FromMeanStd({1}, {1, 2}, &g).IsInvalidArgument());
}

}  // namespace
}  // namespace sluice::features
