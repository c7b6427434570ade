// Sample-rate conversion through soxr: high quality (SOXR_HQ), float32, one thread, so the output
// is a deterministic function of the input on a given machine.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "base/status.h"

namespace sluice::features {

// Samples that converting n samples from in_rate to out_rate yields: round(n * out_rate / in_rate).
size_t ResampledLength(size_t n, double in_rate, double out_rate);

// Converts a whole clip from in_rate to out_rate Hz into *out (resized to ResampledLength; capacity
// kept). Equal rates copy. InvalidArgument for rates <= 0; soxr's own errors as Unsupported.
Status Resample(const float* in, size_t n, int in_rate, int out_rate, std::vector<float>* out);

// Keeps soxr engines between clips (the four most recently used rate pairs), so a loader thread
// converting many clips at a few ratios (speed perturbation factors are rate changes) does not
// rebuild soxr's filters per clip. Not thread-safe: one per thread.
class Resampler {
 public:
  Resampler();
  ~Resampler();
  Resampler(const Resampler&) = delete;
  Resampler& operator=(const Resampler&) = delete;

  // Same contract as Resample(); rates may be fractional (speed perturbation: in_rate =
  // rate * factor, out_rate = rate plays the clip `factor` times faster). Same output as
  // Resample().
  Status Process(const float* in, size_t n, double in_rate, double out_rate,
                 std::vector<float>* out);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sluice::features
