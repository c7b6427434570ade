// sluice-train --device simt end to end (suite 'trainer', every build with the SIMT trainer): the
// CUDA engine -- loader into pinned buffers, feeder, gpu/model's kernels on the SIMT layer, the
// GEMM calls on the CPU cuBLASLt, CTC, AdamW, checkpoints -- runs on the CPU and its loss follows
// the CPU engine's step by step on the 24-clip corpus, and falls.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_util.h"
#include "test_util.h"

namespace {

using sluice::testing::TempDir;
using sluice::train_test::Env;
using sluice::train_test::Result;
using sluice::train_test::Shell;
using sluice::train_test::StepLoss;

class TrainSimt : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    std::string log;
    ASSERT_TRUE(
        sluice::train_test::MakeCharDataset(dir_->Join("corpus"), dir_->Join("chars"), 24, &log))
        << log;
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  // The CUDA suite's settings (train_cuda_test.cc), on `device`.
  static Result Train(const std::string& device, const std::string& args) {
    return Shell(Env("SLUICE_TRAIN") + " " + dir_->Join("chars") + " --device " + device +
                 " --preset tiny --max-frames 1500 --seed 3 " + args);
  }
  static TempDir* dir_;
};
TempDir* TrainSimt::dir_ = nullptr;

// kSteps steps with the same initialisation and batches (no dropout, no held-out rows, one CPU
// replica): the two engines differ only in arithmetic (bf16 weights and activations with fp32
// accumulation on the device, fp32 on the CPU), so their losses drift apart slowly.
constexpr int kSteps = 20;

TEST_F(TrainSimt, LossFollowsTheCpuEngineStepByStepAndFalls) {
  const std::string args = "--steps " + std::to_string(kSteps) +
                           " --dropout 0 --eval-fraction 0 --replicas 1 --log-every 1";
  const Result cpu = Train("cpu", args), simt = Train("simt", args);
  ASSERT_EQ(cpu.code, 0) << cpu.out;
  ASSERT_EQ(simt.code, 0) << simt.out;
  double worst = 0;
  for (int step = 1; step <= kSteps; ++step) {
    const double a = StepLoss(cpu.out, step), b = StepLoss(simt.out, step);
    ASSERT_FALSE(std::isnan(a)) << "step " << step << "\n" << cpu.out;
    ASSERT_FALSE(std::isnan(b)) << "step " << step << "\n" << simt.out;
    const double rel = std::fabs(a - b) / std::fabs(a);
    worst = std::max(worst, rel);
    std::printf("step %2d loss: cpu %.5f simt %.5f (relative %.2e)\n", step, a, b, rel);
    // Step 1 is the forward of the same weights: the whole-model tolerance of tests/gpu/model
    // (1e-2, bf16 GEMM inputs). After it, bf16 rounding of the updated weights adds up; AdamW
    // moves each weight by about lr * sign(gradient), so a wrong gradient sign or a missed
    // update changes the loss by far more than the 5e-2 allowed here.
    EXPECT_NEAR(b, a, (step == 1 ? 1e-2 : 5e-2) * std::fabs(a)) << "step " << step;
  }
  std::printf("worst relative difference over %d steps: %.2e\n", kSteps, worst);
  EXPECT_LT(StepLoss(simt.out, kSteps), 0.9 * StepLoss(simt.out, 1)) << simt.out;
}

// The slow fallback GEMM kernel must never be silent: each epoch's JSON line counts its calls and
// the under-aligned ones (16 bytes: what cuBLASLt's fast kernels load), and on the model's shapes
// (padded attention rows and logit rows) there are neither. The CPU engine has no GEMM counts.
TEST_F(TrainSimt, EpochLinesCountGemmFallbacksAndThereAreNone) {
  const Result simt = Train("simt", "--steps 3 --json --eval-fraction 0");
  ASSERT_EQ(simt.code, 0) << simt.out;
  const auto lines = sluice::train_test::JsonLines(simt.out);
  ASSERT_FALSE(lines.empty()) << simt.out;
  for (const auto& j : lines) {
    ASSERT_TRUE(j.contains("gemm_fallbacks")) << j.dump();
    ASSERT_TRUE(j.contains("gemm_under_aligned")) << j.dump();
    EXPECT_EQ(j["gemm_fallbacks"].get<int64_t>(), 0) << j.dump();
    EXPECT_EQ(j["gemm_under_aligned"].get<int64_t>(), 0) << j.dump();
  }
  const Result cpu = Train("cpu", "--steps 1 --json --eval-fraction 0");
  ASSERT_EQ(cpu.code, 0) << cpu.out;
  for (const auto& j : sluice::train_test::JsonLines(cpu.out))
    EXPECT_FALSE(j.contains("gemm_fallbacks")) << j.dump();
}

// sluice-bench step runs the device engine's step on a synthetic batch and reports what
// tools/bench/asr_torch_step.py reports for PyTorch at the same shape: the same keys (the script's
// PyTorch-only ones aside) and the same model (its parameter count, which the script checks
// against docs/model.md), run here through Debian's torch on the CPU. The loss falls over the steps
// and no GEMM is under-aligned on an odd subsampled length (103 frames -> 25) and vocabulary (29).
TEST_F(TrainSimt, BenchStepReportsWhatTheTorchScriptReports) {
  const std::string shape = " --preset tiny --vocab 29 --batch 3 --frames 103 --lengths uniform";
  const Result sluice = Shell(Env("SLUICE_BENCH") + " step --device simt" + shape +
                              " --steps 4 --warmup-steps 1 --json");
  ASSERT_EQ(sluice.code, 0) << sluice.out;
  const auto ours = sluice::train_test::JsonLines(sluice.out);
  ASSERT_EQ(ours.size(), 1u) << sluice.out;
  const nlohmann::json& j = ours[0];
  EXPECT_LT(j["last_loss"].get<double>(), j["first_loss"].get<double>()) << j.dump();
  EXPECT_EQ(j["gemm_fallbacks"].get<int64_t>(), 0) << j.dump();
  EXPECT_EQ(j["gemm_under_aligned"].get<int64_t>(), 0) << j.dump();
  EXPECT_GT(j["step_ms"].get<double>(), 0.0) << j.dump();

  const Result torch = Shell("/usr/bin/python3 " + Env("SLUICE_SOURCE_ROOT") +
                             "/tools/bench/asr_torch_step.py --device cpu --dtype fp32" + shape +
                             " --steps 1 --warmup-steps 0 --threads 1 --json");
  ASSERT_EQ(torch.code, 0) << torch.out;
  const auto theirs = sluice::train_test::JsonLines(torch.out);
  ASSERT_EQ(theirs.size(), 1u) << torch.out;
  EXPECT_EQ(j["parameters"], theirs[0]["parameters"]);
  EXPECT_EQ(j["encoder_frames"], theirs[0]["encoder_frames"]);
  for (const auto& [key, value] : theirs[0].items()) {
    if (key == "torch" || key == "compile" || key == "fused_adamw" || key == "attention" ||
        key == "max_memory_gib")
      continue;  // PyTorch's own settings
    EXPECT_TRUE(j.contains(key)) << "sluice-bench step lacks the script's key " << key;
  }
}

TEST_F(TrainSimt, CheckpointsMoveBetweenCpuAndSimt) {
  TempDir run;
  sluice::train_test::ExpectCheckpointsMoveBetweenCpuAnd("simt", &Train, run.path());
}

TEST_F(TrainSimt, SeveralRanksAreRefusedWithTheReason) {
  const Result r = Shell("WORLD_SIZE=2 RANK=0 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 "
                         "MASTER_PORT=29500 " + Env("SLUICE_TRAIN") + " " + dir_->Join("chars") +
                         " --device simt --preset tiny --steps 1");
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("one rank per process"), std::string::npos) << r.out;
}

}  // namespace
