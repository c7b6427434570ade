#include "features/fft.h"

#include <fftw3.h>

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <new>

namespace sluice::features {
namespace {

// Guards every FFTW planner call (planning, destroying plans) in this process.
std::mutex& PlannerMutex() {
  static std::mutex mu;
  return mu;
}

}  // namespace

AlignedBuffer::~AlignedBuffer() {
  if (p_ != nullptr) fftwf_free(p_);
}

AlignedBuffer& AlignedBuffer::operator=(AlignedBuffer&& o) noexcept {
  if (this != &o) {
    if (p_ != nullptr) fftwf_free(p_);
    p_ = o.p_;
    n_ = o.n_;
    o.p_ = nullptr;
    o.n_ = 0;
  }
  return *this;
}

void AlignedBuffer::Resize(size_t n) {
  if (n > n_) {
    if (p_ != nullptr) fftwf_free(p_);
    p_ = fftwf_alloc_real(n);
    if (p_ == nullptr) throw std::bad_alloc();
    n_ = n;
  }
  if (n_ > 0) std::memset(p_, 0, n_ * sizeof(float));
}

RealFft::RealFft(int n) : n_(n), plan_(nullptr), inverse_plan_(nullptr) {
  // Caller holds PlannerMutex. The planning arrays only give FFTW their alignment; ESTIMATE
  // does not touch their contents.
  float* in = fftwf_alloc_real(static_cast<size_t>(n));
  fftwf_complex* out = fftwf_alloc_complex(static_cast<size_t>(n / 2 + 1));
  if (in == nullptr || out == nullptr) throw std::bad_alloc();
  plan_ = fftwf_plan_dft_r2c_1d(n, in, out, FFTW_ESTIMATE | FFTW_PRESERVE_INPUT);
  inverse_plan_ = fftwf_plan_dft_c2r_1d(n, out, in, FFTW_ESTIMATE | FFTW_DESTROY_INPUT);
  fftwf_free(in);
  fftwf_free(out);
  if (plan_ == nullptr || inverse_plan_ == nullptr) throw std::bad_alloc();
}

const RealFft* RealFft::Get(int n) {
  std::lock_guard<std::mutex> lock(PlannerMutex());
  // Never destroyed: plans outlive every thread that may still run them at exit.
  static auto* plans = new std::map<int, std::unique_ptr<RealFft>>();
  auto& slot = (*plans)[n];
  if (!slot) slot.reset(new RealFft(n));
  return slot.get();
}

void RealFft::Forward(const float* in, float* out) const {
  // The new-array execute takes a non-const input; FFTW_PRESERVE_INPUT keeps it unmodified.
  fftwf_execute_dft_r2c(static_cast<fftwf_plan>(plan_), const_cast<float*>(in),
                        reinterpret_cast<fftwf_complex*>(out));
}

void RealFft::Inverse(float* in, float* out) const {
  fftwf_execute_dft_c2r(static_cast<fftwf_plan>(inverse_plan_),
                        reinterpret_cast<fftwf_complex*>(in), out);
}

}  // namespace sluice::features
