#include "reference/schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace sluice::reference {

double LearningRate(const ScheduleOptions& o, int64_t step) {
  if (step < o.warmup_steps) return o.peak_lr * static_cast<double>(step + 1) / o.warmup_steps;
  const int64_t span = o.total_steps - o.warmup_steps;
  const double q =
      span <= 0 ? 1.0 : std::clamp(static_cast<double>(step - o.warmup_steps) / span, 0.0, 1.0);
  if (o.cosine)
    return o.min_lr + (o.peak_lr - o.min_lr) * 0.5 * (1.0 + std::cos(std::numbers::pi * q));
  return o.peak_lr + (o.min_lr - o.peak_lr) * q;
}

}  // namespace sluice::reference
