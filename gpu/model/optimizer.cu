#include "gpu/model/optimizer.h"

#include <cmath>

#include "gpu/model/common.cuh"

namespace sluice::gpu::model {
namespace {

using internal::GridFor;
using internal::S;
using internal::kThreads;

constexpr int kNormBlocks = 1024;  // stage-one partials: enough blocks to fill an H100

__global__ void SumSquaresKernel(double* partial, const float* g, size_t n) {
  __shared__ double sh[32];
  double acc = 0.0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const double x = g[i];
    acc += x * x;
  }
  acc = internal::BlockSum(acc, sh);
  if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

__global__ void FinishNormKernel(double* norm, const double* partial, int blocks) {
  __shared__ double sh[32];
  double acc = 0.0;
  for (int i = threadIdx.x; i < blocks; i += blockDim.x) acc += partial[i];
  acc = internal::BlockSum(acc, sh);
  if (threadIdx.x == 0) *norm = sqrt(acc);
}

__global__ void ClipKernel(float* g, size_t n, double max_norm, const double* norm) {
  const double nrm = *norm;
  if (!(max_norm > 0.0 && nrm > max_norm)) return;
  const float scale = static_cast<float>(max_norm / nrm);
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    g[i] *= scale;
}

struct AdamParams {
  double lr, wd, b1, b2, eps, c1, c2;
};

// reference::AdamWUpdate, every double operation rounded explicitly (no contraction).
__global__ void AdamWKernel(float* p, const float* g, float* m, float* v, size_t n, AdamParams a) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const double gi = g[i];
    const double mi = __dadd_rn(__dmul_rn(a.b1, m[i]), __dmul_rn(__dsub_rn(1.0, a.b1), gi));
    const double vi =
        __dadd_rn(__dmul_rn(a.b2, v[i]), __dmul_rn(__dmul_rn(__dsub_rn(1.0, a.b2), gi), gi));
    m[i] = static_cast<float>(mi);
    v[i] = static_cast<float>(vi);
    const double pi = p[i];
    const double update =
        __dadd_rn(__ddiv_rn(__ddiv_rn(mi, a.c1), __dadd_rn(__dsqrt_rn(__ddiv_rn(vi, a.c2)), a.eps)),
                  __dmul_rn(a.wd, pi));
    p[i] = static_cast<float>(__dsub_rn(pi, __dmul_rn(a.lr, update)));
  }
}

}  // namespace

size_t GlobalNormScratch() { return kNormBlocks; }

Status GlobalNorm(double* norm, const float* grads, size_t n, double* scratch, void* stream) {
  const unsigned blocks = n == 0 ? 1 : std::min<unsigned>(kNormBlocks, GridFor(n, kThreads));
  SLUICE_LAUNCH(SumSquaresKernel, blocks, kThreads, 0, S(stream))(scratch, grads, n);
  SLUICE_LAUNCH_CHECK();
  SLUICE_LAUNCH(FinishNormKernel, 1, kThreads, 0, S(stream))
  (norm, scratch, static_cast<int>(blocks));
  SLUICE_LAUNCH_CHECK();
  return Status::OK();
}

Status ClipByGlobalNorm(float* grads, size_t n, double max_norm, double* norm, double* scratch,
                        void* stream) {
  SLUICE_RETURN_IF_ERROR(GlobalNorm(norm, grads, n, scratch, stream));
  if (n == 0 || !(max_norm > 0)) return Status::OK();
  SLUICE_LAUNCH(ClipKernel, GridFor(n, kThreads), kThreads, 0, S(stream))(grads, n, max_norm, norm);
  SLUICE_LAUNCH_CHECK();
  return Status::OK();
}

Status AdamWUpdate(float* params, const float* grads, float* m, float* v, size_t n, double lr,
                   double weight_decay, int64_t step, const reference::AdamWOptions& o,
                   void* stream) {
  if (n == 0) return Status::OK();
  if (step < 1) return Status::InvalidArgument("adamw: step must be >= 1");
  // Bias corrections on the host with std::pow, exactly as the reference computes them.
  const AdamParams a{lr, weight_decay, o.beta1, o.beta2, o.eps,
                     1.0 - std::pow(o.beta1, static_cast<double>(step)),
                     1.0 - std::pow(o.beta2, static_cast<double>(step))};
  SLUICE_LAUNCH(AdamWKernel, GridFor(n, kThreads), kThreads, 0, S(stream))
  (params, grads, m, v, n, a);
  SLUICE_LAUNCH_CHECK();
  return Status::OK();
}

Status CudaAdamW::Create(const std::vector<reference::ParamTensor>& layout,
                         const reference::AdamWOptions& options, std::unique_ptr<CudaAdamW>* out) {
  auto opt = std::unique_ptr<CudaAdamW>(new CudaAdamW());
  opt->options_ = options;
  size_t next = 0;
  for (const reference::ParamTensor& t : layout) {
    if (t.offset != next)
      return Status::InvalidArgument("adamw: layout is not contiguous at " + t.name);
    next += t.count;
    if (!opt->runs_.empty() && opt->runs_.back().decay == t.decay)
      opt->runs_.back().count += t.count;
    else
      opt->runs_.push_back({t.offset, t.count, t.decay});
  }
  SLUICE_RETURN_IF_ERROR(opt->m_.Allocate(next));
  SLUICE_RETURN_IF_ERROR(opt->v_.Allocate(next));
  SLUICE_RETURN_IF_ERROR(opt->m_.Zero(nullptr));
  SLUICE_RETURN_IF_ERROR(opt->v_.Zero(nullptr));
  SLUICE_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(nullptr));
  *out = std::move(opt);
  return Status::OK();
}

Status CudaAdamW::Step(float* params, const float* grads, double lr, void* stream) {
  ++step_;
  for (const Run& r : runs_)
    SLUICE_RETURN_IF_ERROR(
        AdamWUpdate(params + r.offset, grads + r.offset, m_.data() + r.offset, v_.data() + r.offset,
                    r.count, lr, r.decay ? options_.weight_decay : 0.0, step_, options_, stream));
  return Status::OK();
}

Status CudaAdamW::Download(std::vector<float>* m, std::vector<float>* v, void* stream) const {
  m->resize(m_.size());
  v->resize(v_.size());
  SLUICE_RETURN_IF_ERROR(m_.Download(m->data(), m->size(), stream));
  return v_.Download(v->data(), v->size(), stream);
}

Status CudaAdamW::Restore(const std::vector<float>& m, const std::vector<float>& v, int64_t step,
                          void* stream) {
  if (m.size() != m_.size() || v.size() != v_.size() || step < 0)
    return Status::InvalidArgument("adamw: restored state does not match the layout");
  SLUICE_RETURN_IF_ERROR(m_.Upload(m.data(), m.size(), stream));
  SLUICE_RETURN_IF_ERROR(v_.Upload(v.data(), v.size(), stream));
  SLUICE_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(internal::S(stream)));
  step_ = step;
  return Status::OK();
}

}  // namespace sluice::gpu::model
