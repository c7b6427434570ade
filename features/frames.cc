#include "features/frames.h"

namespace sluice::features {

int64_t NumFrames(int64_t n, int length, int shift, FrameConvention convention) {
  if (n <= 0 || length <= 0 || shift <= 0) return 0;
  switch (convention) {
    case FrameConvention::kSnipEdges: return n < length ? 0 : 1 + (n - length) / shift;
    case FrameConvention::kKaldiCenter: return (n + shift / 2) / shift;
    case FrameConvention::kCenter: return 1 + n / shift;
  }
  return 0;
}

int64_t FirstSample(int64_t frame, int length, int shift, FrameConvention convention) {
  switch (convention) {
    case FrameConvention::kSnipEdges: return frame * shift;
    case FrameConvention::kKaldiCenter: return frame * shift + shift / 2 - length / 2;
    case FrameConvention::kCenter: return frame * shift - length / 2;
  }
  return 0;
}

int64_t MirrorIndex(int64_t i, int64_t n, bool repeat_edge) {
  if (n <= 1) return 0;
  // Mirroring is periodic: with the edge repeated the period is 2n, without it 2n - 2.
  const int64_t period = repeat_edge ? 2 * n : 2 * n - 2;
  i %= period;
  if (i < 0) i += period;
  if (i < n) return i;
  return repeat_edge ? period - 1 - i : period - i;
}

}  // namespace sluice::features
