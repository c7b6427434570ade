#include "reference/model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "gradcheck.h"
#include "assert_ok.h"

namespace sluice::reference {
namespace {

using testing::ExpectGradientsClose;
using testing::RandomVector;

ModelConfig CheckConfig() {
  ModelConfig c;
  c.n_mels = 9;  // F1 = 4, F2 = 1
  c.d_model = 8;
  c.n_heads = 2;
  c.n_layers = 2;
  c.d_ff = 16;
  c.vocab = 5;
  c.dropout = 0.2f;
  return c;
}

// Two utterances, the second padded: 23 and 19 frames -> 5 and 4 after subsampling.
template <typename Real>
struct CheckBatch {
  std::vector<Real> features;
  std::vector<int32_t> frames = {23, 19}, labels = {1, 2, 3, 0}, label_lengths = {2, 1};
  ModelBatch<Real> View() const {
    return {features.data(), frames.data(), 2, 23, labels.data(), label_lengths.data(), 2};
  }
  CheckBatch() {
    const auto f = RandomVector(2 * 23 * 9, 77);
    features.assign(f.begin(), f.end());
    for (int t = 19; t < 23; ++t)
      for (int k = 0; k < 9; ++k) features[(23 + t) * 9 + k] = 0;
  }
};

TEST(ModelLayout, IsContiguousInReverseLayerOrder) {
  const auto layout = ParameterLayout(CheckConfig());
  size_t next = 0;
  for (const ParamTensor& t : layout) {
    EXPECT_EQ(t.offset, next) << t.name;
    next += t.count;
  }
  EXPECT_EQ(layout.front().name, "head.out.weight");
  EXPECT_EQ(layout.back().name, "subsampling.conv1.bias");
  size_t layer1 = 0, layer0 = 0;
  for (const ParamTensor& t : layout) {
    if (t.name == "layers.1.fc2.weight") layer1 = t.offset;
    if (t.name == "layers.0.fc2.weight") layer0 = t.offset;
  }
  EXPECT_LT(layer1, layer0);
}

TEST(ModelLayout, SmallPresetHasTenToFifteenMillionParameters) {
  const auto layout = ParameterLayout(ModelConfig::Small(257, 80));
  const size_t n = layout.back().offset + layout.back().count;
  EXPECT_GE(n, 10'000'000u);
  EXPECT_LE(n, 15'000'000u);
  EXPECT_OK(ModelConfig::Small(257, 80).Validate());
  EXPECT_OK(ModelConfig::Tiny(30, 80).Validate());
  ModelConfig bad = ModelConfig::Tiny(30, 80);
  bad.n_heads = 3;
  EXPECT_TRUE(bad.Validate().IsInvalidArgument());
}

// The whole model's gradient, three elements of every tensor, for each feed-forward activation.
void CheckModelGradient(Activation activation) {
  ModelConfig config = CheckConfig();
  config.activation = activation;
  Model<double> model(config);
  model.InitParameters(5);
  CheckBatch<double> batch;
  const StepContext ctx{11, 3, true};  // dropout on: the masks must match between the passes
  double loss;
  ASSERT_OK(model.Forward(batch.View(), ctx, &loss));
  ASSERT_TRUE(std::isfinite(loss));
  model.ZeroGrad();
  model.Backward();
  const std::vector<double> grads(model.grads(), model.grads() + model.num_parameters());
  std::vector<double> analytic, numeric;
  for (const ParamTensor& t : model.layout()) {
    for (size_t j : {size_t{0}, t.count / 2, t.count - 1}) {
      double& p = model.params()[t.offset + j];
      const double saved = p, eps = 1e-6;
      double plus, minus;
      p = saved + eps;
      ASSERT_OK(model.Forward(batch.View(), ctx, &plus));
      p = saved - eps;
      ASSERT_OK(model.Forward(batch.View(), ctx, &minus));
      p = saved;
      analytic.push_back(grads[t.offset + j]);
      numeric.push_back((plus - minus) / (2 * eps));
    }
  }
  ExpectGradientsClose(analytic, numeric, ActivationName(activation), 1e-5, 1e-9);
}

TEST(Model, GradientMatchesFiniteDifferencesOnEveryTensor) {
  CheckModelGradient(Activation::kGelu);
}
TEST(Model, SwishGradientMatchesFiniteDifferencesOnEveryTensor) {
  CheckModelGradient(Activation::kSwish);
}

TEST(Model, ActivationChangesTheOutputButNotTheLayout) {
  ModelConfig swish = CheckConfig();
  swish.activation = Activation::kSwish;
  Model<double> a(CheckConfig()), b(swish);
  ASSERT_EQ(a.num_parameters(), b.num_parameters());
  a.InitParameters(5);
  b.InitParameters(5);
  CheckBatch<double> batch;
  double la, lb;
  ASSERT_OK(a.Forward(batch.View(), StepContext{}, &la));
  ASSERT_OK(b.Forward(batch.View(), StepContext{}, &lb));
  EXPECT_NE(la, lb);
}

TEST(Model, BackwardReportsEveryTensorOnceInIncreasingOffsetOrder) {
  Model<double> model(CheckConfig());
  model.InitParameters(5);
  CheckBatch<double> batch;
  double loss;
  ASSERT_OK(model.Forward(batch.View(), StepContext{}, &loss));
  size_t next = 0;
  model.Backward([&](size_t offset, size_t count) {
    EXPECT_EQ(offset, next);
    next = offset + count;
  });
  EXPECT_EQ(next, model.num_parameters());
}

TEST(Model, PaddingDoesNotChangeTheLossOrGradients) {
  Model<double> model(CheckConfig());
  model.InitParameters(6);
  CheckBatch<double> batch;
  double loss1, loss2;
  ASSERT_OK(model.Forward(batch.View(), StepContext{}, &loss1));
  model.ZeroGrad();
  model.Backward();
  const std::vector<double> g1(model.grads(), model.grads() + model.num_parameters());
  for (int t = 19; t < 23; ++t)
    for (int k = 0; k < 9; ++k) batch.features[(23 + t) * 9 + k] = 5.0 + k;
  ASSERT_OK(model.Forward(batch.View(), StepContext{}, &loss2));
  model.ZeroGrad();
  model.Backward();
  EXPECT_NEAR(loss1, loss2, 1e-12);
  for (size_t i = 0; i < g1.size(); ++i) ASSERT_NEAR(model.grads()[i], g1[i], 1e-12) << i;
  EXPECT_EQ(model.output_lengths(), (std::vector<int32_t>{5, 4}));
}

TEST(Model, FloatAgreesWithDouble) {
  Model<double> md(CheckConfig());
  Model<float> mf(CheckConfig());
  md.InitParameters(8);
  mf.InitParameters(8);
  CheckBatch<double> bd;
  CheckBatch<float> bf;
  double ld;
  float lf;
  ASSERT_OK(md.Forward(bd.View(), StepContext{1, 1, true}, &ld));
  ASSERT_OK(mf.Forward(bf.View(), StepContext{1, 1, true}, &lf));
  EXPECT_NEAR(lf, ld, 1e-5 * std::abs(ld));
  md.ZeroGrad();
  mf.ZeroGrad();
  md.Backward();
  mf.Backward();
  double max_g = 0, max_err = 0;
  for (size_t i = 0; i < md.num_parameters(); ++i) {
    max_g = std::max(max_g, std::abs(md.grads()[i]));
    max_err = std::max(max_err, std::abs(md.grads()[i] - mf.grads()[i]));
  }
  EXPECT_LT(max_err, 1e-5 * max_g);
}

TEST(Model, RejectsBatchesTooShortToSubsample) {
  Model<float> model(CheckConfig());
  std::vector<float> features(6 * 9);
  const int32_t frames[] = {6}, labels[] = {1}, lengths[] = {1};
  float loss;
  EXPECT_TRUE(
      model.Forward({features.data(), frames, 1, 6, labels, lengths, 1}, StepContext{}, &loss)
          .IsInvalidArgument());
}

}  // namespace
}  // namespace sluice::reference
