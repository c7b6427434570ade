#include "reference/ctc.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "reference/softmax.h"
#include "gradcheck.h"
#include "assert_ok.h"

namespace sluice::reference {
namespace {

using testing::ExpectGradientsClose;
using testing::NumericGradient;
using testing::RandomVector;

std::vector<double> LogSoftmax(const std::vector<double>& logits, int T, int V) {
  std::vector<double> lp(logits.size());
  LogSoftmaxForward(lp.data(), logits.data(), T, V);
  return lp;
}

// -log p(labels | x) summing the probability of every one of the V^T paths whose collapse
// (merge repeats, then drop blanks) is `labels`.
double BruteForceLoss(const std::vector<double>& lp, int T, int V,
                      const std::vector<int32_t>& labels) {
  std::vector<int> path(T, 0);
  double total = 0;
  while (true) {
    std::vector<int32_t> collapsed;
    double logp = 0;
    for (int t = 0; t < T; ++t) {
      logp += lp[t * V + path[t]];
      if (path[t] != 0 && (t == 0 || path[t] != path[t - 1])) collapsed.push_back(path[t]);
    }
    if (collapsed == labels) total += std::exp(logp);
    int t = 0;
    while (t < T && ++path[t] == V) path[t++] = 0;
    if (t == T) break;
  }
  return -std::log(total);
}

struct TinyCase {
  int T, V;
  std::vector<int32_t> labels;
};

const TinyCase kTinyCases[] = {
    {1, 2, {1}},       {3, 3, {1, 2}},    {4, 3, {1, 1}},    {5, 4, {1, 2, 3}},
    {6, 4, {2, 2, 3}}, {6, 3, {1}},       {4, 4, {}},        {6, 4, {3, 1, 3}},
    {3, 2, {1, 1}},  // exactly the minimum length: 1 blank 1
};

TEST(CtcLoss, MatchesBruteForceEnumerationOnTinyCases) {
  uint64_t seed = 1;
  for (const TinyCase& c : kTinyCases) {
    const auto logits = RandomVector(static_cast<size_t>(c.T) * c.V, seed++, 2.0);
    const auto lp = LogSoftmax(logits, c.T, c.V);
    double loss = 0;
    ASSERT_OK(CtcLoss(lp.data(), c.T, c.V, c.labels.data(), static_cast<int>(c.labels.size()),
                      CtcOptions{}, &loss, static_cast<double*>(nullptr)));
    EXPECT_NEAR(loss, BruteForceLoss(lp, c.T, c.V, c.labels), 1e-10) << "T=" << c.T;
  }
}

TEST(CtcLoss, GradientWithRespectToLogitsMatchesFiniteDifferences) {
  uint64_t seed = 100;
  for (const TinyCase& c : kTinyCases) {
    auto logits = RandomVector(static_cast<size_t>(c.T) * c.V, seed++, 2.0);
    const int L = static_cast<int>(c.labels.size());
    auto loss_of = [&] {
      const auto lp = LogSoftmax(logits, c.T, c.V);
      double loss;
      EXPECT_OK(CtcLoss(lp.data(), c.T, c.V, c.labels.data(), L, CtcOptions{}, &loss,
                        static_cast<double*>(nullptr)));
      return loss;
    };
    std::vector<double> grad(logits.size());
    double loss;
    const auto lp = LogSoftmax(logits, c.T, c.V);
    ASSERT_OK(CtcLoss(lp.data(), c.T, c.V, c.labels.data(), L, CtcOptions{}, &loss, grad.data()));
    ExpectGradientsClose(grad, NumericGradient(logits, loss_of), "T=" + std::to_string(c.T));
  }
}

TEST(CtcLoss, FloatAgreesWithDouble) {
  const TinyCase& c = kTinyCases[4];
  const auto lp = LogSoftmax(RandomVector(c.T * c.V, 7, 2.0), c.T, c.V);
  std::vector<float> lpf(lp.begin(), lp.end());
  std::vector<double> gd(lp.size());
  std::vector<float> gf(lp.size());
  double ld;
  float lf;
  ASSERT_OK(CtcLoss(lp.data(), c.T, c.V, c.labels.data(), 3, CtcOptions{}, &ld, gd.data()));
  ASSERT_OK(CtcLoss(lpf.data(), c.T, c.V, c.labels.data(), 3, CtcOptions{}, &lf, gf.data()));
  EXPECT_NEAR(lf, ld, 1e-5 * ld);
  for (size_t i = 0; i < gd.size(); ++i) EXPECT_NEAR(gf[i], gd[i], 1e-5);
}

TEST(CtcLoss, ImpossibleAlignmentIsInfiniteWithZeroGradientAndNoNaN) {
  // "1 1" needs 3 frames (1 blank 1); 2 frames cannot hold it.
  const int T = 2, V = 3;
  const std::vector<int32_t> labels = {1, 1};
  EXPECT_EQ(CtcMinInputLength(labels.data(), 2), 3);
  const auto lp = LogSoftmax(RandomVector(T * V, 3), T, V);
  std::vector<double> grad(T * V, 42.0);
  double loss = 0;
  ASSERT_OK(CtcLoss(lp.data(), T, V, labels.data(), 2, CtcOptions{}, &loss, grad.data()));
  EXPECT_TRUE(std::isinf(loss) && loss > 0);
  for (double g : grad) EXPECT_EQ(g, 0.0);

  CtcOptions zero;
  zero.zero_infinity = true;
  ASSERT_OK(CtcLoss(lp.data(), T, V, labels.data(), 2, zero, &loss, grad.data()));
  EXPECT_EQ(loss, 0.0);
  for (double g : grad) EXPECT_EQ(g, 0.0);
}

TEST(CtcLoss, InputShorterThanLabelsIsImpossible) {
  const std::vector<int32_t> labels = {1, 2, 3};
  const auto lp = LogSoftmax(RandomVector(2 * 4, 5), 2, 4);
  double loss;
  ASSERT_OK(CtcLoss(lp.data(), 2, 4, labels.data(), 3, CtcOptions{}, &loss,
                    static_cast<double*>(nullptr)));
  EXPECT_TRUE(std::isinf(loss));
  ASSERT_OK(CtcLoss(lp.data(), 0, 4, labels.data(), 0, CtcOptions{}, &loss,
                    static_cast<double*>(nullptr)));
  EXPECT_EQ(loss, 0.0);  // the empty input emits the empty sequence with probability 1
}

TEST(CtcLoss, RejectsBlankOrOutOfRangeLabels) {
  const auto lp = LogSoftmax(RandomVector(3 * 3, 5), 3, 3);
  double loss;
  for (int32_t bad : {0, 3, -1}) {
    const std::vector<int32_t> labels = {1, bad};
    Status st = CtcLoss(lp.data(), 3, 3, labels.data(), 2, CtcOptions{}, &loss,
                        static_cast<double*>(nullptr));
    EXPECT_TRUE(st.IsInvalidArgument()) << bad;
  }
  const int32_t one = 1;
  EXPECT_TRUE(CtcLoss(lp.data(), -1, 3, &one, 1, CtcOptions{}, &loss, static_cast<double*>(nullptr))
                  .IsInvalidArgument());
}

// Values from tests/reference/ctc_torch_reference.py (torch 1.13, float64, zero_infinity=True).
TEST(CtcLossBatch, MatchesPyTorchCtcLoss) {
  const int B = 3, T = 7, V = 5, S = 3;
  std::vector<double> logits(B * T * V);
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t)
      for (int v = 0; v < V; ++v)
        logits[(b * T + t) * V + v] = 2 * std::sin(0.7 * t + 1.3 * v + 0.5 * b);
  const auto lp = LogSoftmax(logits, B * T, V);
  const std::vector<int32_t> labels = {1, 2, 2, 3, 1, 4, 2, 2, 2};
  const std::vector<int32_t> input_lengths = {7, 6, 4}, label_lengths = {3, 2, 3};
  CtcOptions options;
  options.zero_infinity = true;
  std::vector<double> losses(B), grad(B * T * V, 99.0);
  ASSERT_OK(CtcLossBatch(lp.data(), B, T, V, labels.data(), S, input_lengths.data(),
                         label_lengths.data(), options, losses.data(), grad.data()));
  EXPECT_NEAR(losses[0], 8.862738801681, 1e-9);
  EXPECT_NEAR(losses[1], 8.469051856352, 1e-9);
  EXPECT_EQ(losses[2], 0.0);
  const double g02[] = {-0.120610941652, 0.111490712173, -0.164913506605, 0.016037847528,
                        0.157995888555};
  const double g15[] = {-0.000017451282, -0.963459528532, 0.166351572489, 0.657801630171,
                        0.139323777154};
  for (int v = 0; v < V; ++v) {
    EXPECT_NEAR(grad[(0 * T + 2) * V + v], g02[v], 1e-9);
    EXPECT_NEAR(grad[(1 * T + 5) * V + v], g15[v], 1e-9);
    EXPECT_EQ(grad[(1 * T + 6) * V + v], 0.0);  // past utterance 1's input length
    EXPECT_EQ(grad[(2 * T + 0) * V + v], 0.0);  // the impossible utterance
  }
}

TEST(CtcLossBatch, GradScaleScalesEachUtterance) {
  const int B = 2, T = 5, V = 3, S = 2;
  const auto lp = LogSoftmax(RandomVector(B * T * V, 9), B * T, V);
  const std::vector<int32_t> labels = {1, 2, 2, 0}, in_len = {5, 4}, lab_len = {2, 1};
  std::vector<double> losses(B), g1(B * T * V), g2(B * T * V);
  const double scale[] = {0.5, 0.25};
  ASSERT_OK(CtcLossBatch(lp.data(), B, T, V, labels.data(), S, in_len.data(), lab_len.data(),
                         CtcOptions{}, losses.data(), g1.data()));
  ASSERT_OK(CtcLossBatch(lp.data(), B, T, V, labels.data(), S, in_len.data(), lab_len.data(),
                         CtcOptions{}, losses.data(), g2.data(), scale));
  for (int i = 0; i < B * T * V; ++i) EXPECT_NEAR(g2[i], g1[i] * scale[i / (T * V)], 1e-15);
}

TEST(CtcLossBatch, RejectsLengthsBeyondThePaddedSize) {
  const auto lp = LogSoftmax(RandomVector(2 * 3, 9), 2, 3);
  const int32_t labels[] = {1}, in_len[] = {3}, lab_len[] = {1};
  double loss;
  EXPECT_TRUE(CtcLossBatch(lp.data(), 1, 2, 3, labels, 1, in_len, lab_len, CtcOptions{}, &loss,
                           static_cast<double*>(nullptr)).IsInvalidArgument());
}

}  // namespace
}  // namespace sluice::reference
