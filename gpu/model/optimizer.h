// The optimizer on the GPU, mirroring reference/optimizer.h over the flat fp32 master buffers:
// global-norm clipping (a two-stage deterministic reduction in double) and AdamW fused over
// contiguous runs of tensors that share a weight decay. The element update uses the reference's
// double formula with explicitly rounded operations (no FMA contraction), so it matches the CPU
// to the last bit as long as the host compiler does not contract either.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "base/status.h"
#include "gpu/model/device_array.h"
#include "reference/model.h"
#include "reference/optimizer.h"

namespace sluice::gpu::model {

// Doubles of scratch GlobalNorm needs (stage-one partials).
size_t GlobalNormScratch();
// *norm (device) = sqrt(sum of grads^2), accumulated in double in a fixed order.
Status GlobalNorm(double* norm, const float* grads, size_t n, double* scratch, void* stream);
// GlobalNorm, then grads *= float(max_norm / norm) when max_norm > 0 and norm > max_norm, decided
// on the device (no host round trip). *norm keeps the norm before clipping.
Status ClipByGlobalNorm(float* grads, size_t n, double max_norm, double* norm, double* scratch,
                        void* stream);
// One AdamW update of n elements (reference::AdamWUpdate), step 1-based.
Status AdamWUpdate(float* params, const float* grads, float* m, float* v, size_t n, double lr,
                   double weight_decay, int64_t step, const reference::AdamWOptions& options,
                   void* stream);

// The optimizer state on the device (m and v, zero at the start) and the step counter.
class CudaAdamW {
 public:
  static Status Create(const std::vector<reference::ParamTensor>& layout,
                       const reference::AdamWOptions& options, std::unique_ptr<CudaAdamW>* out);
  // Step step() + 1 with learning rate lr on every tensor, decay where ParamTensor::decay.
  Status Step(float* params, const float* grads, double lr, void* stream);
  int64_t step() const { return step_; }
  float* m() const { return m_.data(); }
  float* v() const { return v_.data(); }
  size_t size() const { return m_.size(); }
  // Checkpoints: host copies of m and v, and putting them back (sizes must match the layout).
  Status Download(std::vector<float>* m, std::vector<float>* v, void* stream) const;
  Status Restore(const std::vector<float>& m, const std::vector<float>& v, int64_t step,
                 void* stream);

 private:
  struct Run {
    size_t offset, count;
    bool decay;
  };
  std::vector<Run> runs_;
  reference::AdamWOptions options_;
  DeviceArray<float> m_, v_;
  int64_t step_ = 0;
};

}  // namespace sluice::gpu::model
