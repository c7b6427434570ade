// Real FFTs through FFTW (single precision), forward and inverse, planned once per size and shared
// by all threads.
//
// FFTW's planner is not thread-safe; its new-array execute functions are. So each size is planned
// once, under a process-wide mutex, on scratch arrays from fftwf_malloc, and every later transform
// runs that plan on the caller's own AlignedBuffers (same alignment as the planning arrays, which
// the new-array API requires). FFTW types stay in fft.cc.
#pragma once

#include <cstddef>

namespace sluice::features {

// Float array from fftwf_malloc (SIMD-aligned as FFTW plans expect). Move-only.
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t n) { Resize(n); }
  ~AlignedBuffer();
  AlignedBuffer(AlignedBuffer&& o) noexcept : p_(o.p_), n_(o.n_) { o.p_ = nullptr, o.n_ = 0; }
  AlignedBuffer& operator=(AlignedBuffer&& o) noexcept;
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;

  // Makes room for n floats, zero-filled; reallocates only when growing, so a reused buffer costs
  // no allocation in steady state. Contents are not preserved across a Resize.
  void Resize(size_t n);
  float* data() { return p_; }
  const float* data() const { return p_; }
  size_t size() const { return n_; }

 private:
  float* p_ = nullptr;
  size_t n_ = 0;
};

class RealFft {
 public:
  // The transform of size n (>= 2), planned on first use (FFTW_ESTIMATE: the same plan in every
  // process, so features are bit-reproducible run to run, unlike FFTW_MEASURE's timed choice).
  // Thread-safe; the object lives until the process exits.
  static const RealFft* Get(int n);

  int size() const { return n_; }
  // in: size() floats; out: 2 * (size() / 2 + 1) floats, (re, im) pairs for bins 0..size()/2.
  // Both must come from AlignedBuffer. in is not modified. Thread-safe.
  void Forward(const float* in, float* out) const;
  // The unnormalised inverse of Forward (out = size() * the original signal): in holds
  // size() / 2 + 1 (re, im) pairs, out size() floats, both from AlignedBuffer. in is overwritten
  // (FFTW's complex-to-real transforms destroy their input). Thread-safe.
  void Inverse(float* in, float* out) const;

 private:
  explicit RealFft(int n);
  int n_;
  void* plan_;          // fftwf_plan, real to complex
  void* inverse_plan_;  // fftwf_plan, complex to real
};

}  // namespace sluice::features
