// The tiny preset learns a synthetic task on the CPU in a few seconds: each label is a segment
// of frames lighting up that label's band of feature channels, with short silences between.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <random>
#include <vector>

#include "reference/model.h"
#include "reference/optimizer.h"
#include "reference/schedule.h"
#include "assert_ok.h"

namespace sluice::reference {
namespace {

constexpr int kVocab = 6;  // blank + 5 tokens
constexpr int kMels = 16;
constexpr int kSegment = 12;  // frames per label (3 after subsampling)
constexpr int kSilence = 4;

struct SyntheticBatch {
  int B = 0, T = 0, S_max = 4;
  std::vector<float> features;
  std::vector<int32_t> frames, labels, label_lengths;
  ModelBatch<float> View() const {
    return {features.data(), frames.data(), B, T, labels.data(), label_lengths.data(), S_max};
  }
};

SyntheticBatch MakeBatch(int B, std::mt19937& rng) {
  SyntheticBatch s;
  s.B = B;
  s.T = kSilence + 4 * (kSegment + kSilence);
  s.features.assign(static_cast<size_t>(B) * s.T * kMels, 0.0f);
  s.frames.resize(B);
  s.labels.assign(static_cast<size_t>(B) * s.S_max, 0);
  s.label_lengths.resize(B);
  std::normal_distribution<float> noise(0.0f, 0.1f);
  for (int b = 0; b < B; ++b) {
    const int L = 2 + static_cast<int>(rng() % 3);
    s.label_lengths[b] = L;
    int t = kSilence;
    for (int i = 0; i < L; ++i) {
      const int token = 1 + static_cast<int>(rng() % (kVocab - 1));
      s.labels[b * s.S_max + i] = token;
      for (int f = 0; f < kSegment; ++f, ++t)
        for (int k = 3 * (token - 1); k < 3 * token; ++k)
          s.features[(static_cast<size_t>(b) * s.T + t) * kMels + k] = 1.0f;
      t += kSilence;
    }
    s.frames[b] = t;
    for (int i = 0; i < t * kMels; ++i)
      s.features[static_cast<size_t>(b) * s.T * kMels + i] += noise(rng);
  }
  return s;
}

TEST(Training, TinyModelLossFallsOnASyntheticTask) {
  const auto start = std::chrono::steady_clock::now();
  ModelConfig config = ModelConfig::Tiny(kVocab, kMels);
  Model<float> model(config);
  model.InitParameters(1);
  AdamWOptions adam;
  AdamW<float> optimizer(model.layout(), adam);
  ScheduleOptions schedule;
  schedule.peak_lr = 3e-3;
  schedule.min_lr = 3e-4;
  schedule.warmup_steps = 10;
  schedule.total_steps = 120;
  std::mt19937 rng(42);
  const SyntheticBatch held_out = MakeBatch(16, rng);
  float first = 0, loss = 0;
  ASSERT_OK(model.Forward(held_out.View(), StepContext{}, &first));
  for (int step = 0; step < schedule.total_steps; ++step) {
    const SyntheticBatch batch = MakeBatch(8, rng);
    ASSERT_OK(
        model.Forward(batch.View(), StepContext{7, static_cast<uint64_t>(step), true}, &loss));
    ASSERT_TRUE(std::isfinite(loss)) << step;
    model.ZeroGrad();
    model.Backward();
    ClipByGlobalNorm(model.grads(), model.num_parameters(), 1.0);
    optimizer.Step(model.params(), model.grads(), LearningRate(schedule, step));
  }
  float last = 0;
  ASSERT_OK(model.Forward(held_out.View(), StepContext{}, &last));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("held-out loss %.3f -> %.3f in %.2f s\n", first, last, seconds);
  EXPECT_LT(last, 0.3f * first);
}

}  // namespace
}  // namespace sluice::reference
