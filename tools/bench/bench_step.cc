// sluice-bench step: one training step of sluice's CTC model at a given shape on the device
// engine (trainer/step_bench.h), with the flags and JSON keys of tools/bench/asr_torch_step.py,
// so that the two run side by side on one card (docs/benchmarks.md, tools/gpu-session):
//
//   sluice-bench step --device cuda --preset small --batch 32 --frames 1600 --json
//   python3 tools/bench/asr_torch_step.py --device cuda --preset small --batch 32 --frames 1600
//       --dtype bf16 --json
//
// step_ms is the median over the timed steps, each ending in a device synchronisation; mfu is the
// model's FLOPs per step (trainer/model_flops.h) over the step time and the card's bf16 peak.
// --device simt runs the same CUDA source on the CPU (a check that it runs, not a measurement).
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <vector>

#include "command_line.h"
#include "commands.h"
#include "trainer/device_backend.h"

namespace sluice::bench {
namespace {

struct StepArgs {
  train::StepBenchOptions o;
  std::string device = "cuda";
  std::string lengths = "full";
  std::string dtype = "bf16";
  bool json = false;
};

bool ParseStepArgs(int argc, char** argv, StepArgs* a, int* exit_code) {
  CLI::App app{
      "One training step of sluice's CTC model on a synthetic batch, timed on the "
      "device: the sluice side of tools/bench/asr_torch_step.py (same flags and keys)",
      argv[0]};
  train::StepBenchOptions& o = a->o;
  app.add_option("--device", a->device, "cuda, or simt (the CUDA source on the CPU)")
      ->check(CLI::IsMember({"cuda", "simt"}));
  app.add_option("--preset", o.preset, "model size")->check(CLI::IsMember({"tiny", "small"}));
  app.add_option("--vocab", o.vocab, "classes including the blank (0)")
      ->check(CLI::Range(2, 1 << 20));
  app.add_option("--n-mels", o.n_mels, "feature bins")->check(CLI::Range(7, 4096));
  app.add_option("--batch", o.batch, "rows")->check(CLI::Range(1, 1 << 16));
  app.add_option("--frames", o.frames, "T: input frames of the longest row")
      ->check(CLI::Range(7, 1 << 20));
  app.add_option("--lengths", a->lengths,
                 "full: every row --frames; uniform: each in [frames/2, frames]")
      ->check(CLI::IsMember({"full", "uniform"}));
  app.add_option("--label-ratio", o.label_ratio, "labels per encoder frame");
  app.add_option("--steps", o.steps, "timed steps")->check(CLI::Range(1, 1 << 20));
  app.add_option("--warmup-steps", o.warmup_steps, "untimed steps first")
      ->check(CLI::Range(0, 1 << 20));
  app.add_option("--dtype", a->dtype,
                 "bf16 only: the engine's GEMMs take bf16 inputs (fp32 accumulation, fp32 master "
                 "weights), as the script's autocast does")
      ->check(CLI::IsMember({"bf16"}));
  app.add_option("--dropout", o.dropout, "dropout probability");
  app.add_option("--lr", o.lr, "AdamW learning rate");
  app.add_option("--weight-decay", o.weight_decay, "AdamW weight decay");
  app.add_option("--clip", o.clip, "global gradient norm clip");
  app.add_option("--seed", o.seed, "initialisation, batch and dropout seed");
  app.add_flag("--json", a->json, "one JSON object on stdout");
  if (!ParseCommandLine(app, argc, argv, exit_code)) return false;
  o.uniform_lengths = a->lengths == "uniform";
  return true;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

nlohmann::json ToJson(const StepArgs& a, const train::StepBenchResult& r) {
  const train::StepBenchOptions& o = a.o;
  const double step_s = Median(r.step_seconds);
  const double mean_s = std::accumulate(r.step_seconds.begin(), r.step_seconds.end(), 0.0) /
                        static_cast<double>(r.step_seconds.size());
  nlohmann::json j;
  j["device"] = r.device;
  j["engine"] = "sluice " + a.device;
  j["preset"] = o.preset;
  j["vocab"] = o.vocab;
  j["n_mels"] = o.n_mels;
  j["parameters"] = r.parameters;
  j["dtype"] = a.dtype;
  j["batch"] = o.batch;
  j["frames"] = o.frames;
  j["lengths"] = a.lengths;
  j["encoder_frames"] = r.encoder_frames;
  j["steps"] = o.steps;
  j["warmup_steps"] = o.warmup_steps;
  j["step_ms"] = step_s * 1e3;
  j["step_ms_min"] = *std::min_element(r.step_seconds.begin(), r.step_seconds.end()) * 1e3;
  j["step_ms_mean"] = mean_s * 1e3;
  j["utterances_per_second"] = o.batch / step_s;
  j["frames_per_second"] = static_cast<double>(r.frames_total) / step_s;
  j["encoder_tokens_per_second"] = static_cast<double>(r.encoder_frames_total) / step_s;
  j["audio_hours_per_second"] = static_cast<double>(r.frames_total) * 0.01 / 3600 / step_s;
  j["step_flops"] = r.step_flops;
  j["mfu"] = r.peak_flops > 0 ? r.step_flops / step_s / r.peak_flops : 0.0;
  j["first_loss"] = r.first_loss;
  j["last_loss"] = r.last_loss;
  j["gemm_fallbacks"] = r.gemm_fallbacks;
  j["gemm_under_aligned"] = r.gemm_under_aligned;
  return j;
}

}  // namespace

int RunStep(int argc, char** argv) {
  StepArgs a;
  int code = 0;
  if (!ParseStepArgs(argc, argv, &a, &code)) return code;
  const train::DeviceBackend* backend = train::FindDeviceBackend(a.device);
  if (backend == nullptr) {
    std::fprintf(stderr,
                 "sluice-bench step: --device %s is not built into this sluice-bench. HINT: "
                 "--device cuda needs nvcc and cuBLASLt at configure time, --device simt the CUDA "
                 "toolkit's headers (docs/gpu.md)\n",
                 a.device.c_str());
    return 1;
  }
  train::StepBenchResult r;
  if (Status st = backend->bench_step(a.o, &r); !st.ok()) {
    std::fprintf(stderr, "sluice-bench step: %s\n", st.ToString().c_str());
    return 1;
  }
  const nlohmann::json j = ToJson(a, r);
  if (a.json) {
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  for (const auto& [k, v] : j.items()) std::printf("%-26s %s\n", k.c_str(), v.dump().c_str());
  return 0;
}

}  // namespace sluice::bench
