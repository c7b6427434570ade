// DeepSpeech2 spectrogram: known answers from torch.stft (make_reference.py), both frame
// conventions, normalisation, thread safety.
#include "features/spectrogram.h"

#include <cmath>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "test_util.h"

namespace sluice::features {
namespace {

using testing::LoadClip;
using testing::LoadReference;
using testing::SyntheticSpeech;

SpectrogramOptions Raw(FrameConvention frames = FrameConvention::kCenter) {
  SpectrogramOptions o;
  o.frames = frames;
  o.normalize = false;  // the references are before normalisation
  return o;
}

std::vector<float> ComputeSpectrogram(const SpectrogramOptions& o, const std::vector<float>& x) {
  SpectrogramComputer computer(o);
  Workspace ws;
  std::vector<float> out;
  computer.Compute(x.data(), x.size(), &ws, &out);
  return out;
}

// Largest |a - b| / |b| over the values, and over all values with |b| below `small` measured
// against `small` instead (a relative error of a value near 0 says nothing).
double MaxRelativeError(const std::vector<float>& a, const std::vector<float>& b, double small) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double denom = std::max(std::fabs(static_cast<double>(b[i])), small);
    worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - b[i]) / denom);
  }
  return worst;
}

TEST(SpectrogramTest, MatchesTorchStftCenterReflect) {
  const auto x = LoadClip("speech_8k.wav", 8000);
  ASSERT_EQ(x.size(), 12000u);
  const SpectrogramComputer computer(Raw());
  EXPECT_EQ(computer.Dim(), 81);
  EXPECT_EQ(computer.NumFrames(x.size()), 151);
  const auto ours = ComputeSpectrogram(Raw(), x);
  const auto torch32 = LoadReference("spectrogram_center.f32");
  const auto torch64 = LoadReference("spectrogram_center_f64.f32");
  ASSERT_EQ(ours.size(), torch32.size());
  ASSERT_EQ(ours.size(), torch64.size());
  // Relative error per value, with values below 0.01 (log1p(|X|) of bins 40 dB under the clip's
  // loudest, ~10% of all) measured against 0.01: there float32 rounding of the FFT dominates, and
  // torch.stft itself is 1.6e-4 away from its float64 result at 1e-3.
  const double vs32 = MaxRelativeError(ours, torch32, 1e-2);
  const double vs64 = MaxRelativeError(ours, torch64, 1e-2);
  const double torch_vs64 = MaxRelativeError(torch32, torch64, 1e-2);
  std::printf("max relative error: vs torch.stft float32 %.2e, vs float64 %.2e (torch: %.2e)\n",
              vs32, vs64, torch_vs64);
  EXPECT_LE(vs32, 1e-4);
  EXPECT_LE(vs64, 1e-4);
  // Against the largest value, everything agrees to float32 precision.
  double peak = 0, worst = 0;
  for (size_t i = 0; i < ours.size(); ++i) {
    peak = std::max(peak, std::fabs(static_cast<double>(torch64[i])));
    worst = std::max(worst, std::fabs(static_cast<double>(ours[i]) - torch64[i]));
  }
  EXPECT_LE(worst / peak, 1e-6);
}

TEST(SpectrogramTest, FrameCountsForBothConventions) {
  const SpectrogramComputer center(Raw(FrameConvention::kCenter));
  const SpectrogramComputer snip(Raw(FrameConvention::kSnipEdges));
  // The seed's example: 16 s at 8 kHz.
  EXPECT_EQ(center.NumFrames(128000), 1601);
  EXPECT_EQ(snip.NumFrames(128000), 1599);
  EXPECT_EQ(snip.NumFrames(159), 0);
  EXPECT_EQ(snip.NumFrames(160), 1);
  EXPECT_EQ(center.NumFrames(1), 1);
  EXPECT_EQ(center.NumFrames(0), 0);
  EXPECT_TRUE(
      SpectrogramComputer::Validate(Raw(FrameConvention::kKaldiCenter)).IsInvalidArgument());
}

TEST(SpectrogramTest, SnipEdgesFramesAreTheInteriorCenterFrames) {
  // With hop = n_fft / 2, centred frame f + 1 starts where snip-edges frame f does.
  const auto x = SyntheticSpeech(8000, 8000, 4, 0.3f);
  const auto center = ComputeSpectrogram(Raw(FrameConvention::kCenter), x);
  const auto snip = ComputeSpectrogram(Raw(FrameConvention::kSnipEdges), x);
  ASSERT_EQ(snip.size(), 99u * 81);
  ASSERT_EQ(center.size(), 101u * 81);
  EXPECT_TRUE(std::equal(snip.begin(), snip.end(), center.begin() + 81));
}

TEST(SpectrogramTest, NormalisationGivesZeroMeanUnitStd) {
  const auto x = SyntheticSpeech(16000, 8000, 5, 0.3f);
  SpectrogramOptions o;  // defaults: normalised
  const auto out = ComputeSpectrogram(o, x);
  double sum = 0, sum_sq = 0;
  for (float v : out) sum += v;
  const double mean = sum / out.size();
  for (float v : out) sum_sq += (v - mean) * (v - mean);
  EXPECT_NEAR(mean, 0.0, 1e-5);
  EXPECT_NEAR(std::sqrt(sum_sq / (out.size() - 1)), 1.0, 1e-5);
  // Silence has no spread: it is centred, not divided by zero.
  const std::vector<float> silence(4000, 0.0f);
  for (float v : ComputeSpectrogram(o, silence)) ASSERT_EQ(v, 0.0f);
}

TEST(SpectrogramTest, LargerFftCentresTheWindowAsTorchDoes) {
  SpectrogramOptions o = Raw();
  o.n_fft = 256;
  const SpectrogramComputer computer(o);
  EXPECT_EQ(computer.Dim(), 129);
  EXPECT_EQ(computer.WindowLength(), 160);
  EXPECT_EQ(computer.NumFrames(8000), 101);
  o.n_fft = 100;
  EXPECT_TRUE(SpectrogramComputer::Validate(o).IsInvalidArgument());
}

TEST(SpectrogramTest, SameOutputFromOneAndFourThreads) {
  const SpectrogramComputer computer(SpectrogramOptions{});
  std::vector<std::vector<float>> clips, serial(8), parallel(8);
  for (uint32_t i = 0; i < 8; ++i) clips.push_back(SyntheticSpeech(4000 + 977 * i, 8000, i, 0.2f));
  Workspace ws;
  for (size_t i = 0; i < clips.size(); ++i) {
    computer.Compute(clips[i].data(), clips[i].size(), &ws, &serial[i]);
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      Workspace own;
      for (size_t i = t; i < clips.size(); i += 4) {
        computer.Compute(clips[i].data(), clips[i].size(), &own, &parallel[i]);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(parallel, serial);
}

}  // namespace
}  // namespace sluice::features
