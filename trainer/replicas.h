// Data parallelism over CPU threads: R copies of the model, each running forward and backward on
// a contiguous share of the batch's rows, their gradients summed into replica 0 (the master, the
// one the optimizer updates) weighted by share size, so the result is the gradient of the mean
// loss over all rows. The sum runs in replica order, so a run is bit-for-bit reproducible for a
// given R; a different R changes the floating-point summation (and the dropout masks, keyed per
// share), not the mathematics.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "base/status.h"
#include "reference/model.h"
#include "loader/batch.h"
#include "trainer/row_batch.h"
#include "trainer/share_workers.h"

namespace sluice::train {

class Replicas {
 public:
  // `first_share`: the dropout key of replica 0. Data parallelism across processes passes
  // rank * replicas, so that no two shares of the job draw the same masks; 0 in one process.
  Replicas(const reference::ModelConfig& config, int replicas, int first_share = 0);
  ~Replicas();

  reference::Model<float>& master() { return *models_[0]; }
  int count() const { return static_cast<int>(models_.size()); }

  // master().grads() <- d(mean over `rows` of the CTC loss)/d params; *loss <- that mean (zeros
  // and 0 for no rows: a rank with no row still joins the step).
  // Copies the master's parameters to the other replicas first. Errors name the record.
  Status TrainStep(const loader::Batch& batch, const std::vector<int>& rows, uint64_t seed,
                   uint64_t step, double* loss);

  // Forward only (no dropout). For each row: its position in `rows`, its loss, and its
  // log-probabilities [frames, vocab]. Called from the caller's thread, in row order.
  using RowFn = std::function<Status(int index, double loss, const float* log_probs, int frames)>;
  Status Evaluate(const loader::Batch& batch, const std::vector<int>& rows, const RowFn& fn);

 private:
  // Runs fn(replica, begin, end) for each non-empty share of n rows, replica 0 on this thread and
  // the others on the persistent workers.
  Status ForShares(int n, const std::function<Status(int, int, int)>& fn);
  // Replicas 1..replicas-1 take the master's (replica 0's) parameters before a step.
  void CopyMasterParameters(int replicas);

  std::vector<std::unique_ptr<reference::Model<float>>> models_;
  std::vector<RowBatch> shares_;
  std::vector<double> losses_;
  std::vector<Status> status_;  // ForShares: each share's outcome, kept so a step allocates nothing
  uint64_t first_share_ = 0;
  ShareWorkers workers_;  // last: joined before the models and buffers it works on go
};

}  // namespace sluice::train
