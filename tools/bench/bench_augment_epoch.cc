#include "bench_augment_epoch.h"

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "loader/loader.h"

namespace sluice::bench {
namespace {

double CpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + ru.ru_stime.tv_sec +
         ru.ru_stime.tv_usec * 1e-6;
}

struct EpochFigures {
  double wall_seconds = 0, cpu_seconds = 0, audio_hours = 0;
  uint64_t batches = 0;
};

// One epoch; the audio is what the batches hold (their rows' frames, so speed perturbation's
// lengths), the CPU time the whole process's (every loader thread) while it ran.
Status Epoch(const AugmentEpochArgs& a, const loader::LoaderOptions& o, EpochFigures* f) {
  std::unique_ptr<loader::Loader> l;
  SLUICE_RETURN_IF_ERROR(loader::Loader::Open(a.dataset, o, &l));
  const double shift = l->feature_info().frame_shift_seconds;
  const double cpu0 = CpuSeconds();
  const auto t0 = std::chrono::steady_clock::now();
  SLUICE_RETURN_IF_ERROR(l->Start(0));
  const loader::Batch* b = nullptr;
  uint64_t frames = 0;
  Status st;
  while ((st = l->Next(&b)).ok() && b != nullptr) {
    for (int32_t n : b->lengths()) frames += static_cast<uint64_t>(n);
    ++f->batches;
  }
  SLUICE_RETURN_IF_ERROR(st);
  f->wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  f->cpu_seconds = CpuSeconds() - cpu0;
  f->audio_hours = static_cast<double>(frames) * shift / 3600.0;
  return Status::OK();
}

}  // namespace

int RunAugmentEpoch(const AugmentEpochArgs& a) {
  loader::LoaderOptions off;
  off.use_precomputed = false;
  if (a.features == "fbank") {
    off.kind = loader::FeatureKind::kFbank;
  } else if (a.features == "spectrogram") {
    off.kind = loader::FeatureKind::kSpectrogram;
  } else if (a.features == "raw") {
    off.kind = loader::FeatureKind::kRaw;
  } else {
    std::fprintf(stderr, "sluice-bench augment: --features %s: fbank, spectrogram or raw\n",
                 a.features.c_str());
    return 1;
  }
  off.threads = a.threads;
  off.seed = 1;
  loader::LoaderOptions on = off;
  features::WaveformAugmentOptions& w = on.waveform_augment;
  const double p = a.probability;
  w.speed.probability = w.tempo.probability = w.babble.probability = w.gain.probability = p;
  w.clipping.probability = w.band_limit.probability = w.codec.probability = p;
  if (a.codec_probability >= 0) w.codec.probability = a.codec_probability;
  if (!a.noise_data.empty()) {
    w.noise.probability = p;
    on.noise_data = a.noise_data;
  }
  if (!a.rir_data.empty()) {
    w.reverb.probability = p;
    on.rir_data = a.rir_data;
  }
  nlohmann::json out = nlohmann::json::object();
  out["consume_hours_per_second"] = a.consume_hours_per_second;
  out["probability"] = p;
  out["codec_probability"] = w.codec.probability;
  if (!a.json)
    std::printf("%-5s %8s %8s %9s %12s %14s %12s\n", "chain", "hours", "wall s", "cpu s",
                "h/s/core", "x rt / core", "cores/GPU");
  for (const auto& [name, o] : {std::pair{"off", off}, std::pair{"on", on}}) {
    EpochFigures f;
    if (Status s = Epoch(a, o, &f); !s.ok()) {
      std::fprintf(stderr, "sluice-bench augment: chain %s: %s\n", name, s.ToString().c_str());
      return 1;
    }
    const double per_core = f.cpu_seconds > 0 ? f.audio_hours / f.cpu_seconds : 0;
    const double cores = per_core > 0 ? a.consume_hours_per_second / per_core : 0;
    out[name] = {{"audio_hours", f.audio_hours},          {"wall_seconds", f.wall_seconds},
                 {"cpu_seconds", f.cpu_seconds},          {"batches", f.batches},
                 {"hours_per_second_per_core", per_core}, {"cores_to_feed_one_gpu", cores}};
    if (!a.json)
      std::printf("%-5s %8.3f %8.2f %9.2f %12.4f %14.0f %12.2f\n", name, f.audio_hours,
                  f.wall_seconds, f.cpu_seconds, per_core, per_core * 3600, cores);
  }
  if (a.json) {
    std::printf("%s\n", out.dump().c_str());
  } else {
    std::printf(
        "cores/GPU: cores that keep up with a trainer consuming %.3f hours of audio per "
        "second (--consume-hours-per-second)\n",
        a.consume_hours_per_second);
  }
  return 0;
}

}  // namespace sluice::bench
