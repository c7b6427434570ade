#include "trainer/replicas.h"

#include <algorithm>
#include <cstring>

namespace sluice::train {

Replicas::Replicas(const reference::ModelConfig& config, int replicas, int first_share)
    : first_share_(static_cast<uint64_t>(first_share)), workers_(std::max(1, replicas) - 1) {
  for (int i = 0; i < std::max(1, replicas); ++i)
    models_.push_back(std::make_unique<reference::Model<float>>(config));
  shares_.resize(models_.size());
  losses_.resize(models_.size());
  status_.resize(models_.size());
}

Replicas::~Replicas() = default;

void Replicas::CopyMasterParameters(int replicas) {
  const size_t bytes = master().num_parameters() * sizeof(float);
  for (int r = 1; r < replicas; ++r) std::memcpy(models_[r]->params(), master().params(), bytes);
}

Status Replicas::ForShares(int n, const std::function<Status(int, int, int)>& fn) {
  const int R = std::min(count(), n);
  // Share r is rows [n*r/R, n*(r+1)/R): sizes differ by at most one.
  workers_.Run(R, [&](int r) { status_[r] = fn(r, n * r / R, n * (r + 1) / R); });
  for (int r = 0; r < R; ++r) SLUICE_RETURN_IF_ERROR(status_[r]);
  return Status::OK();
}

Status Replicas::TrainStep(const loader::Batch& batch, const std::vector<int>& rows, uint64_t seed,
                           uint64_t step, double* loss) {
  const int n = static_cast<int>(rows.size());
  if (n == 0) {
    master().ZeroGrad();
    *loss = 0;
    return Status::OK();
  }
  const int R = std::min(count(), n);
  CopyMasterParameters(R);
  SLUICE_RETURN_IF_ERROR(ForShares(n, [&](int r, int begin, int end) -> Status {
    reference::Model<float>& m = *models_[r];
    SLUICE_RETURN_IF_ERROR(
        shares_[r].Fill(batch, rows.data() + begin, end - begin, m.config().vocab));
    // Each share keys its own dropout masks: the golden-ratio step keeps shares' seeds apart.
    const uint64_t share = first_share_ + static_cast<uint64_t>(r);
    const reference::StepContext ctx{seed + 0x9e3779b97f4a7c15ull * share, step, true};
    float mean = 0;
    SLUICE_RETURN_IF_ERROR(m.Forward(shares_[r].View(), ctx, &mean));
    m.ZeroGrad();
    m.Backward();
    losses_[r] = mean;
    return Status::OK();
  }));
  // Share r's gradient is of its own mean; weight it by its share of the rows.
  const size_t P = master().num_parameters();
  float* g = master().grads();
  const int n0 = n / R;
  const float w0 = static_cast<float>(n0) / n;
  for (size_t i = 0; i < P; ++i) g[i] *= w0;
  double total = losses_[0] * n0;
  for (int r = 1; r < R; ++r) {
    const int size = n * (r + 1) / R - n * r / R;
    const float w = static_cast<float>(size) / n;
    const float* gr = models_[r]->grads();
    for (size_t i = 0; i < P; ++i) g[i] += w * gr[i];
    total += losses_[r] * size;
  }
  *loss = total / n;
  return Status::OK();
}

Status Replicas::Evaluate(const loader::Batch& batch, const std::vector<int>& rows,
                          const RowFn& fn) {
  const int n = static_cast<int>(rows.size());
  const int R = std::min(count(), n);
  CopyMasterParameters(R);
  SLUICE_RETURN_IF_ERROR(ForShares(n, [&](int r, int begin, int end) -> Status {
    reference::Model<float>& m = *models_[r];
    SLUICE_RETURN_IF_ERROR(
        shares_[r].Fill(batch, rows.data() + begin, end - begin, m.config().vocab));
    float mean = 0;
    return m.Forward(shares_[r].View(), reference::StepContext{}, &mean);
  }));
  // Rows in order, from the replica that ran them.
  const int V = master().config().vocab;
  for (int r = 0; r < R; ++r) {
    const reference::Model<float>& m = *models_[r];
    const int begin = n * r / R, end = n * (r + 1) / R;
    for (int i = begin; i < end; ++i) {
      const int local = i - begin;
      const float* lp = m.log_probs() + static_cast<size_t>(local) * m.output_frames() * V;
      SLUICE_RETURN_IF_ERROR(fn(i, m.losses()[local], lp, m.output_lengths()[local]));
    }
  }
  return Status::OK();
}

}  // namespace sluice::train
