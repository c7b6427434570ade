#include "features/dither.h"

#include "base/random.h"
#include "features/kernels.h"

namespace sluice::features {
void AddDither(const float* in, int n, uint32_t key, float scale, float* out) {
  kernels::AddDitherAndSum(in, n, key, scale, out);
}

uint32_t DitherFrameKey(uint64_t stream_key, int64_t frame) {
  return static_cast<uint32_t>(Mix64(stream_key ^ Mix64(static_cast<uint64_t>(frame))) >> 32);
}

}  // namespace sluice::features
