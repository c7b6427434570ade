// Residual add: out = a + b over n values; out may alias a or b. Backward adds dout into both.
#pragma once

#include <cstddef>

namespace sluice::reference {

template <typename Real>
void ResidualForward(Real* out, const Real* a, const Real* b, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

template <typename Real>
void ResidualBackward(Real* da, Real* db, const Real* dout, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    da[i] += dout[i];
    db[i] += dout[i];
  }
}

}  // namespace sluice::reference
