#include "features/kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "features/fast_math.h"

// Each kernel is compiled twice, for x86-64-v3 (AVX2: 8 floats per instruction) and for the
// baseline (SSE2), and the loader picks one at start-up from the CPU (GCC function
// multi-versioning); the binaries keep running on any x86-64. No FMA contraction happens under
// ISO C++ (-ffp-contract=off), and every reduction has an explicit order, so both versions give
// bit-identical results. Not under ThreadSanitizer: GCC instruments the generated ifunc resolver,
// which the dynamic loader runs while relocating, before TSan's runtime is up, and the program
// dies with SIGSEGV before main (build-tsan/, docs/testing.md "ThreadSanitizer").
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__) && \
    !defined(__SANITIZE_THREAD__)
#define SLUICE_KERNEL __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define SLUICE_KERNEL
#endif

namespace sluice::features::kernels {
namespace {

constexpr int kLanes = 8;  // partial sums: one AVX register, two SSE registers

constexpr uint32_t kGolden32 = 0x9e3779b9u;  // 2^32 / golden ratio

// Dither's per-sample hash of w = key + i * kGolden32: one xor-shift-multiply-xor-shift round.
// Cheap (the noise only has to look independent to a filterbank, not to a statistician) and on
// 32-bit lanes so eight go through one AVX2 multiply.
inline uint32_t Hash32(uint32_t w) {
  w ^= w >> 16;
  w *= 0x7feb352du;
  w ^= w >> 15;
  return w;
}

// Pairwise sum of the lanes, in a fixed order so results do not depend on the compiler.
template <typename T>
T Combine(const T* acc) {
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

}  // namespace

SLUICE_KERNEL float Sum(const float* x, int n) {
  float acc[kLanes] = {};
  int i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) acc[l] += x[i + l];
  }
  float tail = 0;
  for (; i < n; ++i) tail += x[i];
  return Combine(acc) + tail;
}

SLUICE_KERNEL float SumSquaresCentred(const float* x, int n, float mean) {
  float acc[kLanes] = {};
  int i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) {
      const float d = x[i + l] - mean;
      acc[l] += d * d;
    }
  }
  float tail = 0;
  for (; i < n; ++i) tail += (x[i] - mean) * (x[i] - mean);
  return Combine(acc) + tail;
}

SLUICE_KERNEL double SumDouble(const float* x, size_t n) {
  double acc[kLanes] = {};
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) acc[l] += x[i + l];
  }
  double tail = 0;
  for (; i < n; ++i) tail += x[i];
  return Combine(acc) + tail;
}

SLUICE_KERNEL double SumSquaresCentredDouble(const float* x, size_t n, double mean) {
  double acc[kLanes] = {};
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) {
      const double d = x[i + l] - mean;
      acc[l] += d * d;
    }
  }
  double tail = 0;
  for (; i < n; ++i) tail += (x[i] - mean) * (x[i] - mean);
  return Combine(acc) + tail;
}

SLUICE_KERNEL void PreemphasiseAndWindow(const float* __restrict x, int n, float mean, float coeff,
                           const float* __restrict window, float* __restrict out) {
  if (n <= 0) return;
  const float x0 = x[0] - mean;
  out[0] = (x0 - coeff * x0) * window[0];
  for (int i = 1; i < n; ++i) {
    out[i] = ((x[i] - mean) - coeff * (x[i - 1] - mean)) * window[i];
  }
}

SLUICE_KERNEL void Multiply(const float* __restrict x, const float* __restrict window, int n,
              float* __restrict out) {
  for (int i = 0; i < n; ++i) out[i] = x[i] * window[i];
}

SLUICE_KERNEL void PowerSpectrum(const float* __restrict pairs, int bins, float* __restrict out) {
  for (int k = 0; k < bins; ++k) {
    const float re = pairs[2 * k];
    const float im = pairs[2 * k + 1];
    out[k] = re * re + im * im;
  }
}

SLUICE_KERNEL void MagnitudeSpectrum(const float* __restrict pairs, int bins,
                                     float* __restrict out) {
  for (int k = 0; k < bins; ++k) {
    const float re = pairs[2 * k];
    const float im = pairs[2 * k + 1];
    out[k] = std::sqrt(re * re + im * im);
  }
}

SLUICE_KERNEL void MelProject(const float* __restrict spectrum, const int* start, const int* length,
                const int* offset, const float* __restrict weights, int num_bins,
                float* __restrict out) {
  // Bands are a few to a few dozen bins long; the short dot products of neighbouring mel bins
  // are independent, so the core overlaps them.
  for (int m = 0; m < num_bins; ++m) {
    const float* s = spectrum + start[m];
    const float* w = weights + offset[m];
    const int len = length[m];
    float a0 = 0, a1 = 0;
    int i = 0;
    for (; i + 2 <= len; i += 2) {
      a0 += w[i] * s[i];
      a1 += w[i + 1] * s[i + 1];
    }
    if (i < len) a0 += w[i] * s[i];
    out[m] = a0 + a1;
  }
}

SLUICE_KERNEL void LogFloored(float* x, int n, float floor) {
  for (int i = 0; i < n; ++i) x[i] = internal::LogPositive(std::max(x[i], floor));
}

SLUICE_KERNEL void Log1p(float* x, int n) {
  for (int i = 0; i < n; ++i) x[i] = internal::Log1pNonNegative(x[i]);
}

SLUICE_KERNEL float AddDitherAndSum(const float* in, int n, uint32_t key, float scale,
                                    float* out) {
  // Sum of the 4 bytes of the hash: mean 510, variance 4 * (256^2 - 1) / 12 = 21845.
  const float norm = scale * 0.0067658751f;  // scale / sqrt(21845)
  // Written with GCC vector types: the auto-vectoriser gives up on this loop (in may equal out),
  // and the explicit 8 lanes keep the sum's order, hence the result, the same in both clones.
  using U8 = uint32_t __attribute__((vector_size(32)));
  using I8 = int32_t __attribute__((vector_size(32)));
  using F8 = float __attribute__((vector_size(32)));
  // Counter i enters as key + i * golden (a Weyl sequence, stepped by addition), then one
  // xor-shift-multiply round mixes it; Hash32 below is the same for the tail.
  U8 weyl = (U8{0, 1, 2, 3, 4, 5, 6, 7} * kGolden32) + key;
  F8 acc = {};
  int i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    U8 h = weyl;
    h ^= h >> 16;
    h *= 0x7feb352du;
    h ^= h >> 15;
    // Bytes summed pairwise in 16-bit halves, then the halves.
    const U8 pairs = (h & 0x00ff00ffu) + ((h >> 8) & 0x00ff00ffu);
    const I8 sum = reinterpret_cast<I8>((pairs & 0xffffu) + (pairs >> 16)) - 510;
    F8 x;
    std::memcpy(&x, in + i, sizeof(x));
    x += __builtin_convertvector(sum, F8) * norm;
    std::memcpy(out + i, &x, sizeof(x));
    acc += x;
    weyl += static_cast<uint32_t>(kLanes) * kGolden32;
  }
  float lanes[kLanes];
  std::memcpy(lanes, &acc, sizeof(lanes));
  float tail = 0;
  for (; i < n; ++i) {
    const uint32_t h = Hash32(key + static_cast<uint32_t>(i) * kGolden32);
    const uint32_t pairs = (h & 0x00ff00ffu) + ((h >> 8) & 0x00ff00ffu);
    const auto sum = static_cast<int32_t>((pairs & 0xffffu) + (pairs >> 16)) - 510;
    out[i] = in[i] + norm * static_cast<float>(sum);
    tail += out[i];
  }
  return Combine(lanes) + tail;
}

}  // namespace sluice::features::kernels
