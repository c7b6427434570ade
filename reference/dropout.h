// Inverted dropout whose mask is a pure function of (seed, step, tensor id, element index), so the
// backward recomputes it instead of storing it, a resumed run draws the same masks, and the CUDA
// kernel reproduces the reference bit for bit. docs/model.md gives the hash.
//   keep(i) = DropoutUniform(key, i) >= p;  out[i] = keep ? in[i] / (1 - p) : 0
#pragma once

#include <cstddef>
#include <cstdint>

namespace sluice::reference {

struct DropoutKey {
  uint64_t seed = 0;       // the run's seed
  uint64_t step = 0;       // optimizer step (the same in forward and backward)
  uint32_t tensor_id = 0;  // which dropout site in the model (Model documents the numbering)
};

// A counter-based hash (splitmix64's finalizer over the key words and the index) mapped to
// [0, 1) with 24 bits, which float represents exactly.
float DropoutUniform(const DropoutKey& key, uint64_t index);

// p in [0, 1): p == 0 copies. out may alias in.
template <typename Real>
void DropoutForward(Real* out, const Real* in, size_t n, float p, const DropoutKey& key);
// Adds the masked, scaled dout into din.
template <typename Real>
void DropoutBackward(Real* din, const Real* dout, size_t n, float p, const DropoutKey& key);

}  // namespace sluice::reference
