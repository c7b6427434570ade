// The CTC kernel against reference::CtcLossBatch on the same fp32 log-probabilities. Both run
// the lattice in double and round the gradient in the same order, so they agree to libm ulps:
// 1e-5 relative on losses and gradients. Impossible alignments give loss 0 (zero_infinity) or
// +inf and an all-zero gradient, never NaN; bad labels raise the device flag.
#include <gtest/gtest.h>

#include <cmath>

#include "gpu/model/ctc.h"
#include "reference/ctc.h"
#include "reference/softmax.h"
#include "test_util.h"
#include "assert_ok.h"

namespace sluice::gpu::model {
namespace {

using namespace testing;

struct Case {
  int B = 0, T = 0, V = 0, S = 0;
  std::vector<float> log_probs;
  std::vector<int32_t> labels, in_len, lab_len;
};

Case MakeCase() {
  Case c;
  c.B = 6;
  c.T = 50;
  c.V = 7;
  c.S = 12;
  const std::vector<float> logits = Random(static_cast<size_t>(c.B) * c.T * c.V, 1, -4, 4);
  c.log_probs.resize(logits.size());
  reference::LogSoftmaxForward(c.log_probs.data(), logits.data(), c.B * c.T, c.V);
  c.labels.assign(static_cast<size_t>(c.B) * c.S, 0);
  // utterance: (input length, labels)
  const std::vector<std::pair<int, std::vector<int32_t>>> u = {
      {50, {1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6}},  // full length, S_max labels
      {31, {3, 3, 3, 2}},                          // repeats need blanks between them
      {6, {1, 1, 2, 2, 3}},                        // needs 7 frames: impossible
      {9, {}},                                     // empty labels: all blanks
      {0, {}},                                     // T = 0, L = 0: probability 1
      {0, {4}},                                    // T = 0, L = 1: impossible
  };
  for (int b = 0; b < c.B; ++b) {
    c.in_len.push_back(u[b].first);
    c.lab_len.push_back(static_cast<int32_t>(u[b].second.size()));
    for (size_t i = 0; i < u[b].second.size(); ++i) c.labels[b * c.S + i] = u[b].second[i];
  }
  return c;
}

TEST(GpuCtc, LossAndGradientMatchReferenceIncludingImpossibleAlignments) {
  SKIP_WITHOUT_GPU();
  const Case c = MakeCase();
  for (bool zero_infinity : {true, false}) {
    reference::CtcOptions o;
    o.zero_infinity = zero_infinity;
    const float scale = 1.0f / c.B;
    std::vector<float> losses(c.B), grad(c.log_probs.size());
    const std::vector<float> scales(c.B, scale);
    ASSERT_OK(reference::CtcLossBatch(c.log_probs.data(), c.B, c.T, c.V, c.labels.data(), c.S,
                                      c.in_len.data(), c.lab_len.data(), o, losses.data(),
                                      grad.data(), scales.data()));
    auto lp = ToDevice(c.log_probs);
    auto labels = ToDevice(c.labels), in_len = ToDevice(c.in_len), lab_len = ToDevice(c.lab_len);
    auto dl = Zeros<float>(c.B);
    auto dg =
        ToDevice(std::vector<float>(c.log_probs.size(), 7.0f));  // must be overwritten in full
    auto ws = Zeros<double>(CtcWorkspaceElems(c.B, c.T, c.S));
    auto bad = Zeros<int32_t>(1);
    ASSERT_OK(CtcLossBatch(lp.data(), c.B, c.T, c.V, labels.data(), c.S, in_len.data(),
                           lab_len.data(), zero_infinity, scale, dl.data(), dg.data(), ws.data(),
                           bad.data(), nullptr));
    const std::vector<float> got_l = ToHost(dl, c.B), got_g = ToHost(dg, grad.size());
    EXPECT_EQ(ToHost(bad, 1)[0], 0);
    for (int b = 0; b < c.B; ++b) {
      if (std::isinf(losses[b])) {
        EXPECT_TRUE(std::isinf(got_l[b]) && got_l[b] > 0) << "utterance " << b;
      } else {
        EXPECT_NEAR(got_l[b], losses[b], 1e-5 * std::max(1.0f, std::abs(losses[b])))
            << "utterance " << b;
      }
    }
    EXPECT_EQ(got_l[2], zero_infinity ? 0.0f : INFINITY);
    EXPECT_EQ(got_l[4], 0.0f);
    size_t nan = 0;
    for (float g : got_g) nan += std::isnan(g);
    EXPECT_EQ(nan, 0u);
    ExpectClose("ctc gradient", got_g, grad, 1e-5, 1e-5, 1e-7);
    // The impossible utterances' gradients are exactly zero.
    for (int b : {2, 5})
      for (int i = 0; i < c.T * c.V; ++i)
        ASSERT_EQ(got_g[static_cast<size_t>(b) * c.T * c.V + i], 0.0f);
  }
}

TEST(GpuCtc, InvalidLabelRaisesTheFlagWithoutNaN) {
  SKIP_WITHOUT_GPU();
  Case c = MakeCase();
  c.labels[1 * c.S + 2] = c.V;  // out of range in utterance 1
  auto lp = ToDevice(c.log_probs);
  auto labels = ToDevice(c.labels), in_len = ToDevice(c.in_len), lab_len = ToDevice(c.lab_len);
  auto dl = Zeros<float>(c.B);
  auto dg = Zeros<float>(c.log_probs.size());
  auto ws = Zeros<double>(CtcWorkspaceElems(c.B, c.T, c.S));
  auto bad = Zeros<int32_t>(1);
  ASSERT_OK(CtcLossBatch(lp.data(), c.B, c.T, c.V, labels.data(), c.S, in_len.data(),
                         lab_len.data(), true, 1.0f, dl.data(), dg.data(), ws.data(), bad.data(),
                         nullptr));
  EXPECT_EQ(ToHost(bad, 1)[0], 2);
  EXPECT_EQ(ToHost(dl, c.B)[1], 0.0f);
}

}  // namespace
}  // namespace sluice::gpu::model
