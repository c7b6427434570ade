// Learning-rate schedule: linear warm-up from 0 to peak_lr over warmup_steps, then cosine or
// linear decay to min_lr at total_steps, constant after. step is 0-based (the step about to run).
//   warm-up:  lr = peak * (step + 1) / warmup_steps
//   decay:    q = (step - warmup) / (total - warmup) in [0, 1]
//             cosine: min + (peak - min) * (1 + cos(pi q)) / 2;  linear: peak + (min - peak) q
#pragma once

#include <cstdint>

namespace sluice::reference {

struct ScheduleOptions {
  double peak_lr = 1e-3;
  double min_lr = 0.0;
  int64_t warmup_steps = 0;
  int64_t total_steps = 1;  // end of the decay
  bool cosine = true;       // false: linear decay
};

double LearningRate(const ScheduleOptions& options, int64_t step);

}  // namespace sluice::reference
