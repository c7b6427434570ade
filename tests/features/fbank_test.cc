// Kaldi-compatible filterbank: known answers from torchaudio.compliance.kaldi.fbank
// (make_reference.py), frame counts, dither determinism and thread safety.
#include "features/fbank.h"

#include <cfloat>
#include <cmath>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "assert_ok.h"
#include "base/random.h"
#include "features/dither.h"
#include "test_util.h"

namespace sluice::features {
namespace {

using testing::Compare;
using testing::LoadClip;
using testing::LoadReference;
using testing::Scaled;
using testing::SyntheticSpeech;

std::vector<float> Speech16k() { return Scaled(LoadClip("speech_16k.wav", 16000), 32768.0f); }

std::vector<float> ComputeFbank(const FbankOptions& opt, const std::vector<float>& x,
                                uint64_t key = 0) {
  FbankComputer computer(opt);
  Workspace ws;
  std::vector<float> out;
  computer.Compute(x.data(), x.size(), &ws, &out, key);
  return out;
}

// Acceptance: 99.9% of values within 1e-3 of torchaudio, none beyond 0.05.
void ExpectMatchesTorchaudio(const FbankOptions& opt, const std::string& reference,
                             int64_t frames) {
  const auto x = Speech16k();
  FbankComputer computer(opt);
  ASSERT_EQ(computer.NumFrames(x.size()), frames);
  const auto ours = ComputeFbank(opt, x);
  const auto ref = LoadReference(reference);
  ASSERT_EQ(ours.size(), ref.size()) << reference << ": run make_reference.py?";
  const auto stats = Compare(ours, ref, 1e-3);
  std::printf("%s vs torchaudio: max %.2e, mean %.2e, within 1e-3: %.5f\n", reference.c_str(),
              stats.max_abs, stats.mean_abs, stats.fraction_within);
  EXPECT_GE(stats.fraction_within, 0.999) << reference;
  EXPECT_LE(stats.max_abs, 0.05) << reference;
}

FbankOptions DefaultOptions() {
  FbankOptions o;
  o.num_mel_bins = 80;
  return o;
}

TEST(FbankTest, MatchesTorchaudioWithDefaults) {
  ExpectMatchesTorchaudio(DefaultOptions(), "fbank_default.f32", 148);
}

TEST(FbankTest, MatchesTorchaudioWithCentredFramesEnergyAndMagnitude) {
  FbankOptions o;
  o.num_mel_bins = 40;
  o.snip_edges = false;
  o.window_type = WindowType::kHamming;
  o.use_energy = true;
  o.energy_floor = 1.0f;
  o.remove_dc_offset = false;
  o.use_power = false;
  o.low_freq = 60;
  o.high_freq = -400;
  o.preemphasis_coefficient = 0.9f;
  o.frame_length_ms = 20;
  o.frame_shift_ms = 12;
  ExpectMatchesTorchaudio(o, "fbank_center_energy.f32", 125);
}

TEST(FbankTest, MatchesTorchaudioWithHtkEnergyAndUnpaddedFft) {
  FbankOptions o;
  o.num_mel_bins = 64;
  o.window_type = WindowType::kHanning;
  o.round_to_power_of_two = false;
  o.use_energy = true;
  o.htk_compat = true;
  o.raw_energy = false;
  ExpectMatchesTorchaudio(o, "fbank_htk_nopad.f32", 148);
}

TEST(FbankTest, NoFurtherFromFloat64ThanTorchaudio) {
  const auto ours = ComputeFbank(DefaultOptions(), Speech16k());
  const auto torch32 = LoadReference("fbank_default.f32");
  const auto exact = LoadReference("fbank_default_f64.f32");
  ASSERT_EQ(ours.size(), exact.size());
  const auto mine = Compare(ours, exact, 1e-3);
  const auto theirs = Compare(torch32, exact, 1e-3);
  std::printf("vs float64: ours max %.2e mean %.2e; torchaudio max %.2e mean %.2e\n",
              mine.max_abs, mine.mean_abs, theirs.max_abs, theirs.mean_abs);
  EXPECT_LE(mine.max_abs, theirs.max_abs);
  EXPECT_LE(mine.mean_abs, theirs.mean_abs);
}

TEST(FbankTest, FrameCountsForBothConventions) {
  FbankOptions o = DefaultOptions();
  FbankComputer snip(o);
  o.snip_edges = false;
  FbankComputer centred(o);
  // 16 s at 16 kHz, 25 ms windows every 10 ms.
  EXPECT_EQ(snip.NumFrames(256000), 1598);
  EXPECT_EQ(centred.NumFrames(256000), 1600);
  EXPECT_EQ(snip.NumFrames(399), 0);
  EXPECT_EQ(snip.NumFrames(400), 1);
  EXPECT_EQ(snip.NumFrames(559), 1);
  EXPECT_EQ(snip.NumFrames(560), 2);
  EXPECT_EQ(centred.NumFrames(79), 0);
  EXPECT_EQ(centred.NumFrames(80), 1);
  EXPECT_EQ(centred.NumFrames(0), 0);
  // Short inputs still work in centred mode (mirrored as often as needed).
  const auto x = SyntheticSpeech(100, 16000, 1);
  Workspace ws;
  std::vector<float> out;
  EXPECT_EQ(centred.Compute(x.data(), x.size(), &ws, &out), 1);
  EXPECT_EQ(out.size(), 80u);
  EXPECT_EQ(snip.Compute(x.data(), x.size(), &ws, &out), 0);
  EXPECT_TRUE(out.empty());
}

TEST(FbankTest, DitherIsDeterministicPerKeyAndSmall) {
  FbankOptions o = DefaultOptions();
  o.dither = 1.0f;
  const auto x = SyntheticSpeech(16000, 16000, 7);
  const auto a = ComputeFbank(o, x, StreamKey(1, 0, 42));
  const auto b = ComputeFbank(o, x, StreamKey(1, 0, 42));
  const auto c = ComputeFbank(o, x, StreamKey(1, 1, 42));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  const auto clean = ComputeFbank(DefaultOptions(), x);
  EXPECT_LT(Compare(a, clean, 0.01).mean_abs, 0.01);
}

TEST(FbankTest, DitherKeepsSilenceOffTheLogFloor) {
  const std::vector<float> silence(8000, 0.0f);
  FbankOptions o = DefaultOptions();
  const auto floored = ComputeFbank(o, silence);
  for (float v : floored) ASSERT_FLOAT_EQ(v, std::log(FLT_EPSILON));
  o.dither = 1.0f;
  const auto dithered = ComputeFbank(o, silence, 3);
  for (float v : dithered) ASSERT_GT(v, std::log(FLT_EPSILON) + 1);
}

TEST(DitherTest, NoiseHasZeroMeanUnitVarianceAndDependsOnTheKey) {
  std::vector<float> zeros(200000, 0.0f), noise(zeros.size()), other(zeros.size());
  AddDither(zeros.data(), static_cast<int>(zeros.size()), 12345, 1.0f, noise.data());
  AddDither(zeros.data(), static_cast<int>(zeros.size()), 12346, 1.0f, other.data());
  double sum = 0, sum_sq = 0, cross = 0, lag1 = 0, within_one_sigma = 0;
  for (size_t i = 0; i < noise.size(); ++i) {
    sum += noise[i];
    sum_sq += noise[i] * noise[i];
    cross += noise[i] * other[i];
    if (i > 0) lag1 += noise[i] * noise[i - 1];
    within_one_sigma += std::fabs(noise[i]) <= 1.0f ? 1 : 0;
  }
  const double n = static_cast<double>(noise.size());
  EXPECT_NEAR(sum / n, 0.0, 0.01);
  EXPECT_NEAR(sum_sq / n, 1.0, 0.01);
  EXPECT_NEAR(cross / n, 0.0, 0.01);  // other keys: independent
  EXPECT_NEAR(lag1 / n, 0.0, 0.01);   // neighbouring samples: independent
  // Irwin-Hall(4) puts 66.9% within one sigma (a Gaussian 68.3%).
  EXPECT_NEAR(within_one_sigma / n, 0.669, 0.005);
  EXPECT_NE(DitherFrameKey(1, 0), DitherFrameKey(1, 1));
  EXPECT_NE(DitherFrameKey(1, 0), DitherFrameKey(2, 0));
}

TEST(FbankTest, SameFeaturesFromOneAndFourThreads) {
  FbankOptions o = DefaultOptions();
  o.dither = 1.0f;
  const FbankComputer computer(o);
  std::vector<std::vector<float>> clips;
  for (uint32_t i = 0; i < 8; ++i) clips.push_back(SyntheticSpeech(8000 + 1111 * i, 16000, i));
  std::vector<std::vector<float>> serial(clips.size());
  {
    Workspace ws;
    for (size_t i = 0; i < clips.size(); ++i) {
      computer.Compute(clips[i].data(), clips[i].size(), &ws, &serial[i], i);
    }
  }
  std::vector<std::vector<float>> parallel(clips.size());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      Workspace ws;  // one per thread
      for (int rep = 0; rep < 3; ++rep) {
        for (size_t i = t; i < clips.size(); i += 4) {
          computer.Compute(clips[i].data(), clips[i].size(), &ws, &parallel[i], i);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(parallel, serial);
}

TEST(FbankTest, ComputersOfDifferentSizesShareAWorkspace) {
  FbankOptions small = DefaultOptions();
  FbankOptions large = DefaultOptions();
  large.frame_length_ms = 50;
  large.num_mel_bins = 40;
  const auto x = SyntheticSpeech(12000, 16000, 9);
  Workspace shared;
  std::vector<float> a, b, c;
  FbankComputer(small).Compute(x.data(), x.size(), &shared, &a);
  FbankComputer(large).Compute(x.data(), x.size(), &shared, &b);
  FbankComputer(small).Compute(x.data(), x.size(), &shared, &c);
  EXPECT_EQ(a, c);
  EXPECT_EQ(a, ComputeFbank(small, x));
  EXPECT_EQ(b, ComputeFbank(large, x));
}

TEST(FbankTest, ComputesIntoCallerMemory) {
  const FbankComputer computer(DefaultOptions());
  const auto x = SyntheticSpeech(5000, 16000, 2);
  std::vector<float> buffer(computer.NumFrames(x.size()) * computer.Dim() + 1, -7.0f);
  Workspace ws;
  EXPECT_EQ(computer.Compute(x.data(), x.size(), &ws, buffer.data()), computer.NumFrames(x.size()));
  EXPECT_EQ(buffer.back(), -7.0f);  // nothing written past the end
  buffer.pop_back();
  EXPECT_EQ(buffer, ComputeFbank(DefaultOptions(), x));
}

TEST(FbankTest, InvalidOptionsAreRejected) {
  FbankOptions o = DefaultOptions();
  o.num_mel_bins = 2;
  EXPECT_TRUE(FbankComputer::Validate(o).IsInvalidArgument());
  EXPECT_THROW(FbankComputer{o}, std::invalid_argument);
  o = DefaultOptions();
  o.high_freq = 9000;  // above Nyquist
  EXPECT_TRUE(FbankComputer::Validate(o).IsInvalidArgument());
  o = DefaultOptions();
  o.num_mel_bins = 300;  // more bins than FFT bins can carry
  Status s = FbankComputer::Validate(o);
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(s.message().find("mel"), std::string::npos) << s.message();
  o = DefaultOptions();
  o.frame_shift_ms = 0;
  EXPECT_TRUE(FbankComputer::Validate(o).IsInvalidArgument());
  o = DefaultOptions();
  o.dither = -1;
  EXPECT_TRUE(FbankComputer::Validate(o).IsInvalidArgument());
  EXPECT_OK(FbankComputer::Validate(DefaultOptions()));
}

}  // namespace
}  // namespace sluice::features
