#include "features/resample.h"

#include <soxr.h>

#include <algorithm>
#include <cstdint>
#include <cmath>
#include <string>

namespace sluice::features {

size_t ResampledLength(size_t n, double in_rate, double out_rate) {
  return static_cast<size_t>(std::llround(static_cast<double>(n) * out_rate / in_rate));
}

// A few soxr engines keyed by rate pair: speed perturbation alternates between a handful of
// ratios, and rebuilding soxr's filters per clip would cost more than the conversion itself.
struct Resampler::Impl {
  struct Engine {
    soxr_t soxr = nullptr;
    double in_rate = 0;
    double out_rate = 0;
    uint64_t last_use = 0;
  };
  static constexpr int kMaxEngines = 4;
  Engine engines[kMaxEngines];
  uint64_t clock = 0;
  ~Impl() {
    for (Engine& e : engines) {
      if (e.soxr != nullptr) soxr_delete(e.soxr);
    }
  }
  // The engine for these rates, created (evicting the least recently used) when missing.
  Status Get(double in_rate, double out_rate, soxr_t* out) {
    ++clock;
    Engine* victim = &engines[0];
    for (Engine& e : engines) {
      if (e.soxr != nullptr && e.in_rate == in_rate && e.out_rate == out_rate) {
        e.last_use = clock;
        soxr_clear(e.soxr);
        *out = e.soxr;
        return Status::OK();
      }
      if (e.soxr == nullptr || (victim->soxr != nullptr && e.last_use < victim->last_use))
        victim = &e;
    }
    if (victim->soxr != nullptr) soxr_delete(victim->soxr);
    victim->soxr = nullptr;
    soxr_error_t err = nullptr;
    const soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
    const soxr_quality_spec_t quality = soxr_quality_spec(SOXR_HQ, 0);
    const soxr_runtime_spec_t runtime = soxr_runtime_spec(1);  // deterministic, caller-threaded
    soxr_t s = soxr_create(in_rate, out_rate, 1, &err, &io, &quality, &runtime);
    if (s == nullptr || err != nullptr) {
      if (s != nullptr) soxr_delete(s);
      return Status::Unsupported(std::string("resample: soxr_create failed: ") +
                                 (err != nullptr ? err : "unknown error"));
    }
    *victim = Engine{s, in_rate, out_rate, clock};
    *out = s;
    return Status::OK();
  }
};

Resampler::Resampler() : impl_(std::make_unique<Impl>()) {}
Resampler::~Resampler() = default;

Status Resampler::Process(const float* in, size_t n, double in_rate, double out_rate,
                          std::vector<float>* out) {
  if (!(in_rate > 0) || !(out_rate > 0) || !std::isfinite(in_rate) || !std::isfinite(out_rate)) {
    return Status::InvalidArgument("resample: rates must be > 0 (got " + std::to_string(in_rate) +
                                   " -> " + std::to_string(out_rate) + " Hz)");
  }
  if (in_rate == out_rate) {
    out->assign(in, in + n);
    return Status::OK();
  }
  const size_t want = ResampledLength(n, in_rate, out_rate);
  out->resize(want);
  if (want == 0) return Status::OK();
  soxr_t soxr = nullptr;
  SLUICE_RETURN_IF_ERROR(impl_->Get(in_rate, out_rate, &soxr));
  // Feed the whole clip, then flush (in = nullptr) until soxr has produced `want` samples or has
  // nothing left; soxr's own end-of-stream length can differ from round(n * ratio) by a sample,
  // so a short tail is zero-filled and the length is always ResampledLength().
  size_t produced = 0;
  size_t consumed = 0;
  soxr_error_t err = nullptr;
  while (produced < want) {
    // in == nullptr tells soxr the input has ended, so it flushes its filter's tail.
    const bool flushing = consumed >= n;
    size_t idone = 0;
    size_t odone = 0;
    err = soxr_process(soxr, flushing ? nullptr : in + consumed, flushing ? 0 : n - consumed,
                       &idone, out->data() + produced, want - produced, &odone);
    if (err != nullptr) break;
    consumed += idone;
    produced += odone;
    if (odone == 0 && (flushing || idone == 0)) break;  // drained (or stuck: do not spin)
  }
  if (err != nullptr) return Status::Unsupported(std::string("resample: soxr: ") + err);
  std::fill(out->begin() + static_cast<std::ptrdiff_t>(produced), out->end(), 0.0f);
  return Status::OK();
}

Status Resample(const float* in, size_t n, int in_rate, int out_rate, std::vector<float>* out) {
  Resampler r;
  return r.Process(in, n, in_rate, out_rate, out);
}

}  // namespace sluice::features
