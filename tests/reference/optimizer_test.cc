#include "reference/optimizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "reference/schedule.h"

namespace sluice::reference {
namespace {

TEST(AdamW, FirstStepMovesEachParameterByLrTimesSignPlusDecay) {
  // After one step m_hat = g and v_hat = g^2, so the update is g / (|g| + eps) = sign(g).
  std::vector<float> p = {1.0f, -2.0f, 0.5f}, g = {0.3f, -4.0f, 0.0f}, m(3), v(3);
  AdamWOptions o;
  o.weight_decay = 0.1;
  AdamWUpdate(p.data(), g.data(), m.data(), v.data(), 3, 0.01, o.weight_decay, 1, o);
  EXPECT_NEAR(p[0], 1.0 - 0.01 * (1 + 0.1 * 1.0), 1e-6);
  EXPECT_NEAR(p[1], -2.0 - 0.01 * (-1 + 0.1 * -2.0), 1e-6);
  EXPECT_NEAR(p[2], 0.5 - 0.01 * (0.1 * 0.5), 1e-7);
  EXPECT_NEAR(m[0], 0.1 * 0.3, 1e-7);
  EXPECT_NEAR(v[1], 0.001 * 16, 1e-7);
}

TEST(AdamW, MatchesAHandRolledSecondStep) {
  AdamWOptions o;
  double p = 1, m = 0, v = 0;
  const double g1 = 0.5, g2 = -0.25, lr = 0.1;
  AdamWUpdate(&p, &g1, &m, &v, 1, lr, 0.0, 1, o);
  AdamWUpdate(&p, &g2, &m, &v, 1, lr, 0.0, 2, o);
  const double m2 = 0.9 * 0.1 * g1 + 0.1 * g2, v2 = 0.999 * 0.001 * g1 * g1 + 0.001 * g2 * g2;
  const double p2 =
      1 - lr * 1 - lr * (m2 / (1 - 0.81)) / (std::sqrt(v2 / (1 - 0.999 * 0.999)) + 1e-8);
  EXPECT_NEAR(p, p2, 1e-6);  // the first step moved p by lr * sign(g1)
}

TEST(AdamW, DecaysOnlyTensorsMarkedForDecay) {
  std::vector<ParamTensor> layout = {{"w", 0, 2, true}, {"b", 2, 1, false}};
  AdamWOptions o;
  o.weight_decay = 0.5;
  AdamW<double> opt(layout, o);
  std::vector<double> p = {1, 1, 1}, g = {0, 0, 0};
  opt.Step(p.data(), g.data(), 0.1);
  EXPECT_NEAR(p[0], 0.95, 1e-12);
  EXPECT_NEAR(p[1], 0.95, 1e-12);
  EXPECT_EQ(p[2], 1.0);
  EXPECT_EQ(opt.step(), 1);
}

TEST(ClipByGlobalNorm, ScalesOnlyAboveTheThreshold) {
  std::vector<float> g = {3, 4};
  EXPECT_NEAR(ClipByGlobalNorm(g.data(), 2, 10.0), 5.0, 1e-6);
  EXPECT_EQ(g, (std::vector<float>{3, 4}));
  EXPECT_NEAR(ClipByGlobalNorm(g.data(), 2, 1.0), 5.0, 1e-6);
  EXPECT_NEAR(g[0], 0.6f, 1e-6);
  EXPECT_NEAR(g[1], 0.8f, 1e-6);
  EXPECT_NEAR(GlobalNorm(g.data(), 2), 1.0, 1e-6);
}

TEST(LearningRate, WarmsUpLinearlyThenDecaysToTheMinimum) {
  ScheduleOptions o;
  o.peak_lr = 1.0;
  o.min_lr = 0.1;
  o.warmup_steps = 4;
  o.total_steps = 14;
  EXPECT_DOUBLE_EQ(LearningRate(o, 0), 0.25);
  EXPECT_DOUBLE_EQ(LearningRate(o, 3), 1.0);
  EXPECT_DOUBLE_EQ(LearningRate(o, 4), 1.0);
  EXPECT_NEAR(LearningRate(o, 9), 0.55, 1e-12);  // halfway: (peak + min) / 2
  EXPECT_NEAR(LearningRate(o, 14), 0.1, 1e-12);
  EXPECT_NEAR(LearningRate(o, 100), 0.1, 1e-12);
  o.cosine = false;
  EXPECT_NEAR(LearningRate(o, 6), 1.0 - 0.9 * 0.2, 1e-12);
}

}  // namespace
}  // namespace sluice::reference
