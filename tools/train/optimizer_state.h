// AdamW over the model's flat buffer with state a checkpoint can restore. The reference's
// AdamW<float> class has no way to set its step counter back, so the trainer keeps m, v and the
// step itself and applies the reference's fused update (reference::AdamWUpdate) tensor by tensor,
// exactly as AdamW<Real>::Step does.
#pragma once

#include <cstdint>
#include <vector>

#include "gpu/reference/model.h"
#include "gpu/reference/optimizer.h"

namespace sluice::train {

struct OptimizerState {
  reference::AdamWOptions options;
  std::vector<float> m, v;  // one each per parameter, zero at the start
  int64_t step = 0;         // updates applied; the next one is step + 1 (bias correction)

  void Reset(size_t parameters) {
    m.assign(parameters, 0.0f);
    v.assign(parameters, 0.0f);
    step = 0;
  }
  void Step(const std::vector<reference::ParamTensor>& layout, float* params, const float* grads, double lr) {
    ++step;
    for (const reference::ParamTensor& t : layout)
      reference::AdamWUpdate(params + t.offset, grads + t.offset, m.data() + t.offset, v.data() + t.offset,
                             t.count, lr, t.decay ? options.weight_decay : 0.0, step, options);
  }
};

}  // namespace sluice::train
