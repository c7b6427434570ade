// Helpers of the CUDA model's tests (suite 'gpu'): SKIP_WITHOUT_GPU, ASSERT_OK (tests/testing),
// move vectors to and from the device, seeded inputs, and per-tensor comparisons with the CPU
// reference.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "features/half.h"
#include "gpu/device.h"
#include "gpu/model/device_array.h"
#include "assert_ok.h"
#include "../skip_without_gpu.h"

namespace sluice::gpu::model::testing {

inline std::vector<float> Random(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

inline std::vector<Bf16> ToBf16(const std::vector<float>& v) {
  std::vector<Bf16> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) features::FloatToBFloat16(&v[i], 1, &out[i].bits);
  return out;
}
inline std::vector<float> FromBf16(const std::vector<Bf16>& v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = FloatFromBf16(v[i]);
  return out;
}
// The value a bf16 GEMM operand really has.
inline std::vector<float> RoundBf16(const std::vector<float>& v) { return FromBf16(ToBf16(v)); }

template <typename T>
DeviceArray<T> ToDevice(const std::vector<T>& host) {
  DeviceArray<T> d;
  EXPECT_OK(d.Allocate(std::max<size_t>(host.size(), 1)));
  EXPECT_OK(d.Upload(host.data(), host.size(), nullptr));
  return d;
}
template <typename T>
DeviceArray<T> Zeros(size_t n) {
  DeviceArray<T> d;
  EXPECT_OK(d.Allocate(std::max<size_t>(n, 1)));
  EXPECT_OK(d.Zero(nullptr));
  return d;
}
// n NaNs (bf16 NaN for Bf16): scratch that a kernel must write before anything reads it, so that
// a read of memory nothing wrote shows as a non-finite result.
template <typename T>
DeviceArray<T> NaNs(size_t n) {
  const std::vector<float> nan(std::max<size_t>(n, 1), std::numeric_limits<float>::quiet_NaN());
  if constexpr (std::is_same_v<T, Bf16>) return ToDevice(ToBf16(nan));
  else return ToDevice(std::vector<T>(nan.begin(), nan.end()));
}
template <typename T>
std::vector<T> ToHost(const DeviceArray<T>& d, size_t n) {
  std::vector<T> h(n);
  EXPECT_OK(d.Download(h.data(), n, nullptr));
  return h;
}

// Per-tensor agreement: the relative L2 error ||got - want|| / ||want|| (the measure a bf16
// rounding bound speaks to, as errors of many elements average out) and the largest absolute
// error against the tensor's scale max|want|. `atol` keeps near-zero tensors from failing on
// noise.
inline void ExpectClose(const std::string& what, const std::vector<float>& got,
                        const std::vector<float>& want, double rel_l2, double rel_max,
                        double atol = 1e-6) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double err2 = 0, ref2 = 0, max_err = 0, max_ref = 0;
  size_t worst = 0, nonfinite = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) ++nonfinite;
    const double e = std::abs(static_cast<double>(got[i]) - want[i]);
    err2 += e * e;
    ref2 += static_cast<double>(want[i]) * want[i];
    if (e > max_err) {
      max_err = e;
      worst = i;
    }
    max_ref = std::max(max_ref, std::abs(static_cast<double>(want[i])));
  }
  EXPECT_EQ(nonfinite, 0u) << what << ": non-finite values";
  const double l2 = std::sqrt(err2), norm = std::sqrt(ref2);
  EXPECT_LE(l2, rel_l2 * norm + atol * std::sqrt(static_cast<double>(got.size())))
      << what << ": relative L2 error " << (norm > 0 ? l2 / norm : l2) << " > " << rel_l2;
  EXPECT_LE(max_err, rel_max * max_ref + atol)
      << what << ": max error " << max_err << " at " << worst << " (got " << got[worst] << ", want "
      << want[worst] << ", scale " << max_ref << ")";
}

}  // namespace sluice::gpu::model::testing
