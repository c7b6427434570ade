// Finite-difference helpers for tests/reference: central differences in double on the double
// instantiation of the reference ops, so the checks are tight (eps 1e-6, relative error ~1e-7).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace sluice::reference::testing {

inline std::vector<double> RandomVector(size_t n, uint64_t seed, double scale = 1.0) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(-scale, scale);
  std::vector<double> v(n);
  for (double& x : v) x = dist(rng);
  return v;
}

// d f / d x[i] for every i by central differences; x is restored.
inline std::vector<double> NumericGradient(std::vector<double>& x,
                                           const std::function<double()>& f,
                                           double eps = 1e-6) {
  std::vector<double> g(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double saved = x[i];
    x[i] = saved + eps;
    const double plus = f();
    x[i] = saved - eps;
    const double minus = f();
    x[i] = saved;
    g[i] = (plus - minus) / (2 * eps);
  }
  return g;
}

// |a - n| <= rtol * max(|a|, |n|) + atol elementwise, naming the first few mismatches.
inline void ExpectGradientsClose(const std::vector<double>& analytic,
                                 const std::vector<double>& numeric, const std::string& what,
                                 double rtol = 1e-5, double atol = 1e-8) {
  ASSERT_EQ(analytic.size(), numeric.size()) << what;
  int reported = 0;
  for (size_t i = 0; i < analytic.size(); ++i) {
    const double a = analytic[i], n = numeric[i];
    const double tol = rtol * std::max(std::abs(a), std::abs(n)) + atol;
    if (!(std::abs(a - n) <= tol) && reported++ < 5)
      ADD_FAILURE() << what << "[" << i << "]: analytic " << a << " numeric " << n;
  }
}

inline double Dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

}  // namespace sluice::reference::testing
