// sluice-bench feed: does the feeder hide host-to-device copies behind compute? (docs/gpu.md)
//
// A synthetic consumer spins --step-ms of GPU time per batch on the compute stream. Reported:
//   H2D bandwidth: plain cudaMemcpy (the reference), cudaMemcpyAsync from pinned memory (the
//   feeder's path) and from pageable memory;
//   feeder runs (pinned, then pageable batch memory): per-step data wait (GPU-measured: the
//   compute stream idle between steps for want of data), step time, and the ratio of step time
//   with the feeder to step time with the data already resident (1.0 = copies fully hidden);
//   device allocations after setup (0 = steady state allocates nothing).
// Batches are synthetic (--rows x --frames x --dim floats) or come from a dataset (--dataset,
// the real loader with pinned batch memory). Without a GPU it says so and exits 0.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "command_line.h"
#include "commands.h"

#if SLUICE_HAVE_GPU
#include "gpu/cuda_feed_backend.h"
#include "gpu/device.h"
#include "gpu/feeder.h"
#include "gpu/kernels.h"
#include "gpu/loader_source.h"
#include "gpu/pinned_allocator.h"
#include "loader/loader.h"
#endif

namespace sluice::bench {

namespace {

// The command line of sluice-bench feed.
struct FeedArgs {
  double step_ms = 20;
  uint64_t steps = 200;
  size_t rows = 32;
  int64_t frames = 1600;
  int dim = 80;
  int buffers = 3, holds = 2;
  double copy_mb = 256;
  std::string dataset;
  int threads = 0;
  uint64_t max_frames = 20000;
  bool json = false, no_pageable = false;
};

// Parses the command line into *a; false when the program ends here, with *exit_code (--help: 0).
bool ParseFeedArgs(int argc, char** argv, FeedArgs* a, int* exit_code) {
  CLI::App app{
      "Host-to-device feed: data wait per step, H2D GB/s pinned vs pageable, step time "
      "with the feeder over step time with resident data.",
      argv[0]};
  app.add_option("--step-ms", a->step_ms, "GPU time the synthetic consumer spends per batch (ms)");
  app.add_option("--steps", a->steps, "batches per measured run (synthetic)")
      ->check(CLI::Range(1, 1 << 24));
  app.add_option("--rows", a->rows, "synthetic batch rows")->check(CLI::Range(1, 1 << 20));
  app.add_option("--frames", a->frames, "synthetic batch frames (T)")
      ->check(CLI::Range(1, 1 << 24));
  app.add_option("--dim", a->dim, "synthetic batch feature dim (F)")->check(CLI::Range(1, 1 << 16));
  app.add_option("--buffers", a->buffers, "device buffers of the feeder")->check(CLI::Range(2, 64));
  app.add_option("--holds", a->holds, "batches the feeder may hold (loader consumer_batches)")
      ->check(CLI::Range(1, 64));
  app.add_option("--copy-mb", a->copy_mb, "size of the bandwidth test copy (MiB)");
  app.add_option("--dataset", a->dataset,
                 "feed a shardify dataset through the real loader instead");
  app.add_option("--threads", a->threads, "loader threads with --dataset (0 = the usable cores)");
  app.add_option("--max-frames", a->max_frames, "loader cap on frames per batch with --dataset");
  app.add_flag("--no-pageable", a->no_pageable, "skip the pageable-memory feeder run");
  app.add_flag("--json", a->json, "one JSON object on stdout");
  return ParseCommandLine(app, argc, argv, exit_code);
}

}  // namespace

#if SLUICE_HAVE_GPU
namespace {

using Clock = std::chrono::steady_clock;
double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Batches of one fixed shape from `holds` buffers, written once: a source that always outpaces
// the consumer, so what is measured is the copy path alone.
class SyntheticSource : public gpu::BatchSource {
 public:
  SyntheticSource(std::shared_ptr<loader::BatchAllocator> alloc, int holds, uint64_t batches,
                  size_t rows, int64_t frames, int dim)
      : alloc_(std::move(alloc)),
        holds_(holds),
        batches_(batches),
        rows_(rows),
        frames_(frames),
        dim_(dim) {
    bytes_ = rows * frames * dim * sizeof(float);
    for (int i = 0; i < holds; ++i) {
      float* f = static_cast<float*>(alloc_->Allocate(bytes_, loader::kBatchAlignment));
      int32_t* l = static_cast<int32_t*>(alloc_->Allocate(rows * 4, loader::kBatchAlignment));
      if (f == nullptr || l == nullptr) continue;
      for (size_t p = 0; p < bytes_ / 4; ++p) f[p] = static_cast<float>(p % 1000);
      for (size_t r = 0; r < rows; ++r) l[r] = static_cast<int32_t>(frames);
      features_.push_back(f);
      lengths_.push_back(l);
    }
  }
  ~SyntheticSource() override {
    for (float* f : features_) alloc_->Free(f, bytes_, loader::kBatchAlignment);
    for (int32_t* l : lengths_) alloc_->Free(l, rows_ * 4, loader::kBatchAlignment);
  }
  bool ok() const { return static_cast<int>(features_.size()) == holds_; }
  Status Next(gpu::HostBatch* out, bool* end) override {
    *end = next_ >= batches_;
    if (*end) return Status::OK();
    const size_t i = next_ % holds_;
    *out = gpu::HostBatch();
    out->index = next_++;
    out->rows = rows_;
    out->frames = frames_;
    out->dim = dim_;
    out->features = features_[i];
    out->features_bytes = bytes_;
    out->lengths = lengths_[i];
    return Status::OK();
  }
  int holds() const override { return holds_; }
  void Restart() { next_ = 0; }
  const void* first() const { return features_[0]; }
  size_t bytes() const { return bytes_; }

 private:
  std::shared_ptr<loader::BatchAllocator> alloc_;
  int holds_;
  uint64_t batches_;
  size_t rows_;
  int64_t frames_;
  int dim_;
  size_t bytes_ = 0;
  std::vector<float*> features_;
  std::vector<int32_t*> lengths_;
  uint64_t next_ = 0;
};

// Best-of-`reps` GB/s of one copy of `bytes` from `src`.
Status Bandwidth(const void* src, void* dst, size_t bytes, bool async, void* stream, int reps,
                 double* gbps) {
  double best = 1e300;
  for (int r = 0; r < reps + 1; ++r) {  // the first is a warm-up
    const auto t0 = Clock::now();
    if (async) {
      SLUICE_RETURN_IF_ERROR(gpu::CopyHostToDevice(dst, src, bytes, stream));
      SLUICE_RETURN_IF_ERROR(gpu::SynchronizeDevice());
    } else {
      SLUICE_RETURN_IF_ERROR(gpu::CopyHostToDeviceSync(dst, src, bytes));
    }
    const double s = Seconds(t0, Clock::now());
    if (r > 0) best = std::min(best, s);
  }
  *gbps = bytes / best / 1e9;
  return Status::OK();
}

struct FeedResult {
  double step_seconds = 0;       // wall per step, feeder
  double resident_seconds = 0;   // wall per step, data already on the device
  gpu::FeedStats stats;
};

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * (v.size() - 1) + 0.5))];
}

// Steps over `source` with the feeder; then the same steps with no copies at all.
Status RunFeeder(gpu::BatchSource* source, const gpu::FeedCapacity& cap, int buffers,
                 double step_s, uint64_t warmup, const std::function<Status()>& restart,
                 FeedResult* out) {
  std::unique_ptr<gpu::FeedBackend> be;
  SLUICE_RETURN_IF_ERROR(gpu::MakeCudaFeedBackend(gpu::CudaFeedOptions(), &be));
  gpu::FeederOptions fo;
  fo.capacity = cap;
  fo.device_buffers = buffers;
  std::unique_ptr<gpu::Feeder> feeder;
  SLUICE_RETURN_IF_ERROR(gpu::Feeder::Create(std::move(be), source, fo, &feeder));
  void* stream = feeder->compute_stream();
  // Warm-up epoch prefix: first-touch costs, clocks up.
  const gpu::DeviceBatch* b = nullptr;
  for (uint64_t i = 0; i < warmup; ++i) {
    SLUICE_RETURN_IF_ERROR(feeder->Next(&b));
    if (b == nullptr) break;
    SLUICE_RETURN_IF_ERROR(gpu::SpinOnStream(stream, step_s));
  }
  SLUICE_RETURN_IF_ERROR(feeder->Finish());
  SLUICE_RETURN_IF_ERROR(restart());
  SLUICE_RETURN_IF_ERROR(feeder->Rewind());
  const gpu::FeedStats before = feeder->stats();
  uint64_t steps = 0;
  const auto t0 = Clock::now();
  while (true) {
    SLUICE_RETURN_IF_ERROR(feeder->Next(&b));
    if (b == nullptr) break;  // Next synchronised everything
    SLUICE_RETURN_IF_ERROR(gpu::SpinOnStream(stream, step_s));
    ++steps;
  }
  const auto t1 = Clock::now();
  if (steps == 0) return Status::InvalidArgument("the source yielded no batches");
  out->step_seconds = Seconds(t0, t1) / steps;
  out->stats = feeder->stats();
  out->stats.steps -= before.steps;
  out->stats.timed_steps -= before.timed_steps;
  out->stats.data_wait_seconds -= before.data_wait_seconds;
  out->stats.device_allocations -= before.device_allocations;
  // Resident: the same steps, the batch already on the device.
  const auto r0 = Clock::now();
  for (uint64_t i = 0; i < steps; ++i) SLUICE_RETURN_IF_ERROR(gpu::SpinOnStream(stream, step_s));
  SLUICE_RETURN_IF_ERROR(gpu::SynchronizeDevice());
  out->resident_seconds = Seconds(r0, Clock::now()) / steps;
  return Status::OK();
}

void PrintFeed(const char* name, const FeedResult& r, double step_s, nlohmann::json* j, bool json) {
  const gpu::FeedStats& s = r.stats;
  const double mean = s.timed_steps ? s.data_wait_seconds / s.timed_steps : 0;
  const double ratio = r.resident_seconds > 0 ? r.step_seconds / r.resident_seconds : 0;
  (*j)[name] = {{"steps", s.steps},
                {"step_seconds", r.step_seconds},
                {"resident_step_seconds", r.resident_seconds},
                {"ratio", ratio},
                {"data_wait_mean_seconds", mean},
                {"data_wait_p50_seconds", Percentile(s.recent_waits, 0.5)},
                {"data_wait_p99_seconds", Percentile(s.recent_waits, 0.99)},
                {"data_wait_max_seconds", s.max_data_wait_seconds},
                {"data_wait_percent", step_s > 0 ? 100.0 * mean / r.step_seconds : 0},
                {"steady_state_allocations", s.device_allocations},
                {"host_wait_seconds", s.host_wait_seconds}};
  if (json) return;
  std::printf(
      "%-9s step %.3f ms (resident %.3f ms) ratio %.4f | data wait mean %.1f us p50 %.1f us "
      "p99 %.1f us max %.1f us (%.3f%% of step) | steady-state device allocations %llu\n",
      name, r.step_seconds * 1e3, r.resident_seconds * 1e3, ratio, mean * 1e6,
      Percentile(s.recent_waits, 0.5) * 1e6, Percentile(s.recent_waits, 0.99) * 1e6,
      s.max_data_wait_seconds * 1e6, 100.0 * mean / r.step_seconds,
      static_cast<unsigned long long>(s.device_allocations));
}

int Fail(const Status& st) {
  std::fprintf(stderr, "sluice-bench feed: %s\n", st.ToString().c_str());
  return 1;
}

// 1. H2D bandwidth: cudaMemcpy and cudaMemcpyAsync from pinned and from pageable memory.
Status MeasureBandwidth(const FeedArgs& a, nlohmann::json* j) {
  const size_t bytes = static_cast<size_t>(a.copy_mb * (1 << 20));
  auto pinned = gpu::MakePinnedAllocator();
  void* hp = pinned->Allocate(bytes, 4096);
  std::vector<char> pageable(bytes, 1);
  std::unique_ptr<gpu::DeviceBuffer> dev;
  Status st = gpu::DeviceBuffer::Allocate(bytes, &dev);
  if (!st.ok() || hp == nullptr) return st.ok() ? Status::IOError("pinned allocation failed") : st;
  std::memset(hp, 1, bytes);
  std::unique_ptr<gpu::Stream> stream;
  SLUICE_RETURN_IF_ERROR(gpu::Stream::Create(&stream));
  double memcpy_pinned = 0, async_pinned = 0, memcpy_pageable = 0, async_pageable = 0;
  SLUICE_RETURN_IF_ERROR(Bandwidth(hp, dev->data(), bytes, false, nullptr, 5, &memcpy_pinned));
  SLUICE_RETURN_IF_ERROR(
      Bandwidth(hp, dev->data(), bytes, true, stream->handle(), 5, &async_pinned));
  SLUICE_RETURN_IF_ERROR(
      Bandwidth(pageable.data(), dev->data(), bytes, false, nullptr, 3, &memcpy_pageable));
  SLUICE_RETURN_IF_ERROR(
      Bandwidth(pageable.data(), dev->data(), bytes, true, stream->handle(), 3, &async_pageable));
  pinned->Free(hp, bytes, 4096);
  const double best = std::max({memcpy_pinned, async_pinned, memcpy_pageable, async_pageable});
  (*j)["h2d_gbps"] = {{"bytes", bytes},
                      {"cudaMemcpy_pinned", memcpy_pinned},
                      {"cudaMemcpyAsync_pinned", async_pinned},
                      {"cudaMemcpy_pageable", memcpy_pageable},
                      {"cudaMemcpyAsync_pageable", async_pageable},
                      {"feeder_path_vs_best", async_pinned / best}};
  if (!a.json)
    std::printf(
        "H2D %.0f MiB: cudaMemcpy pinned %.2f GB/s, cudaMemcpyAsync pinned %.2f GB/s "
        "(%.1f%% of best), pageable %.2f / %.2f GB/s\n",
        a.copy_mb, memcpy_pinned, async_pinned, 100.0 * async_pinned / best, memcpy_pageable,
        async_pageable);
  return Status::OK();
}

// 2a. The feeder over the real loader on --dataset, with pinned batch memory.
Status FeedLoader(const FeedArgs& a, double step_s, uint64_t warmup, nlohmann::json* j) {
  loader::LoaderOptions o;
  o.threads = a.threads;
  o.batching.max_frames = a.max_frames;
  o.consumer_batches = a.holds;
  o.allocator = gpu::MakePinnedAllocator();
  std::unique_ptr<loader::Loader> l;
  SLUICE_RETURN_IF_ERROR(loader::Loader::Open(a.dataset, o, &l));
  SLUICE_RETURN_IF_ERROR(l->Start(0));
  gpu::LoaderSource source(l.get());
  FeedResult r;
  uint64_t epoch = 0;
  SLUICE_RETURN_IF_ERROR(RunFeeder(
      &source, gpu::CapacityForPlan(*l), a.buffers, step_s, warmup,
      [&] { return l->Start(++epoch); }, &r));
  PrintFeed("loader", r, step_s, j, a.json);
  const loader::EpochStats es = l->stats();
  (*j)["loader"]["loader_wait_seconds"] = es.wait_seconds;
  return Status::OK();
}

// 2b. The feeder over synthetic batches in pinned, then (unless --no-pageable) pageable memory.
Status FeedSynthetic(const FeedArgs& a, double step_s, uint64_t warmup, nlohmann::json* j) {
  const size_t per_batch = a.rows * a.frames * a.dim * sizeof(float);
  gpu::FeedCapacity cap;
  cap.feature_bytes = per_batch;
  cap.rows = a.rows;
  (*j)["batch_bytes"] = per_batch;
  if (!a.json)
    std::printf("synthetic batches of %zu x %lld x %d float32 = %.2f MB\n", a.rows,
                static_cast<long long>(a.frames), a.dim, per_batch / 1e6);
  for (bool pinned : {true, false}) {
    if (!pinned && a.no_pageable) continue;
    SyntheticSource source(gpu::MakePinnedAllocator(/*force_fallback=*/!pinned), a.holds, a.steps,
                           a.rows, a.frames, a.dim);
    if (!source.ok()) return Status::IOError("host batch allocation failed");
    FeedResult r;
    SLUICE_RETURN_IF_ERROR(RunFeeder(
        &source, cap, a.buffers, step_s, warmup,
        [&] {
          source.Restart();
          return Status::OK();
        },
        &r));
    PrintFeed(pinned ? "pinned" : "pageable", r, step_s, j, a.json);
  }
  return Status::OK();
}

// Everything but the parse, on the first GPU; a machine without one is told so and exits 0.
int MeasureFeed(const FeedArgs& a) {
  int devices = 0;
  const Status probe = gpu::ProbeDevices(&devices);
  if (!probe.ok()) {
    std::printf(
        "sluice-bench feed: %s.\nThis benchmark measures host-to-device copies and needs a "
        "GPU; nothing to measure here. The loader side alone: sluice-bench epoch "
        "--step-ms %.1f\n",
        probe.message().c_str(), a.step_ms);
    return 0;
  }
  const double step_s = a.step_ms * 1e-3;
  nlohmann::json j;
  j["device"] = gpu::DeviceDescription(0);
  j["step_ms"] = a.step_ms;
  if (!a.json)
    std::printf("device: %s, consumer step %.3f ms\n", j["device"].get<std::string>().c_str(),
                a.step_ms);
  if (Status st = MeasureBandwidth(a, &j); !st.ok()) return Fail(st);
  const uint64_t warmup = std::min<uint64_t>(a.steps, 10);
  const Status st =
      a.dataset.empty() ? FeedSynthetic(a, step_s, warmup, &j) : FeedLoader(a, step_s, warmup, &j);
  if (!st.ok()) return Fail(st);
  if (a.json) std::printf("%s\n", j.dump().c_str());
  return 0;
}

}  // namespace
#endif  // SLUICE_HAVE_GPU

int RunFeed(int argc, char** argv) {
  FeedArgs a;
  int code = 0;
  if (!ParseFeedArgs(argc, argv, &a, &code)) return code;
#if !SLUICE_HAVE_GPU
  std::printf(
      "sluice-bench feed: built without CUDA (gpu/ needs nvcc: meson setup -Dcuda=enabled); "
      "nothing to measure. The loader side alone: sluice-bench epoch --step-ms %.1f\n",
      a.step_ms);
  return 0;
#else
  return MeasureFeed(a);
#endif
}

}  // namespace sluice::bench
