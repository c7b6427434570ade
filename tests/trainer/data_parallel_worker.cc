// One rank of the data-parallel test (data_parallel_mpi_test.cc starts it under mpirun -np 2).
// Every rank trains the tiny reference model for a few steps twice over the same synthetic
// batches: once alone on all rows (the single-process run, no communication), once on its share
// of the rows with the gradients combined by CombineGradients. The data-parallel weights must
// equal the single-process ones within a tight tolerance and be the same bits on every rank; the
// combined gradient of every step must equal the single-process one (1e-5 of its largest element).
// Splits: halves, uneven (3 of 8 rows on rank 0), and a rank with no rows at all. Prints
// "rank R of W: ok" or the failures; exits non-zero on any failure.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "trainer/data_parallel.h"
#include "comm/mpi_communicator.h"
#include "reference/model.h"
#include "reference/optimizer.h"

namespace sluice::train {
namespace {

using reference::ModelBatch;
using reference::ModelConfig;

constexpr int kVocab = 6, kMels = 16, kRows = 8, kSteps = 6, kT = 60, kSMax = 4;

int failures = 0;

void Fail(int rank, const std::string& what) {
  std::fprintf(stderr, "rank %d: FAIL %s\n", rank, what.c_str());
  ++failures;
}

// Rows of random features and labels; lengths vary so the shares pad differently.
struct Rows {
  int B = 0;
  std::vector<float> features;
  std::vector<int32_t> frames, labels, label_lengths;
  ModelBatch<float> View() const {
    return {features.data(), frames.data(), B, kT, labels.data(), label_lengths.data(), kSMax};
  }
  Rows Slice(int begin, int end) const {
    Rows s;
    s.B = end - begin;
    const size_t row = static_cast<size_t>(kT) * kMels;
    s.features.assign(features.begin() + begin * row, features.begin() + end * row);
    s.frames.assign(frames.begin() + begin, frames.begin() + end);
    s.labels.assign(labels.begin() + begin * kSMax, labels.begin() + end * kSMax);
    s.label_lengths.assign(label_lengths.begin() + begin, label_lengths.begin() + end);
    return s;
  }
};

Rows MakeRows(uint64_t seed) {
  std::mt19937 rng(static_cast<uint32_t>(seed));
  std::normal_distribution<float> noise(0.0f, 1.0f);
  Rows r;
  r.B = kRows;
  r.features.resize(static_cast<size_t>(kRows) * kT * kMels);
  for (float& x : r.features) x = noise(rng);
  for (int b = 0; b < kRows; ++b) {
    r.frames.push_back(40 + static_cast<int>(rng() % (kT - 40 + 1)));
    const int L = 1 + static_cast<int>(rng() % kSMax);
    r.label_lengths.push_back(L);
    for (int i = 0; i < kSMax; ++i)
      r.labels.push_back(i < L ? 1 + static_cast<int>(rng() % (kVocab - 1)) : 0);
  }
  return r;
}

struct Trained {
  std::vector<float> params;
  std::vector<std::vector<float>> grads;  // per step, before clipping
  std::vector<double> losses;  // per step
};

// kSteps of forward, backward, clip and AdamW. With comm: this rank's rows [begin, end) of each
// batch and CombineGradients; without: all rows.
Status Train(comm::Communicator* comm, int begin, int end, Trained* out) {
  ModelConfig config = ModelConfig::Tiny(kVocab, kMels);
  config.dropout = 0;  // masks depend on a row's position in its batch, which the split changes
  reference::Model<float> model(config);
  model.InitParameters(5);
  // Adam divides each gradient by its own running magnitude, so where the true gradient is 0 (the
  // attention's key bias: softmax ignores a shift shared by all keys) it turns summation-order
  // noise of 1e-9 into lr-sized steps of random sign, in any two runs that add in different
  // orders. eps 1e-4 damps those and leaves every real gradient's step Adam's.
  reference::AdamWOptions adam_options;
  adam_options.eps = 1e-4;
  reference::AdamW<float> adam(model.layout(), adam_options);
  const size_t P = model.num_parameters();
  for (int step = 0; step < kSteps; ++step) {
    const Rows all = MakeRows(100 + step);
    const Rows mine = all.Slice(begin, end);
    float mean = 0;
    if (mine.B > 0) {
      SLUICE_RETURN_IF_ERROR(model.Forward(
          mine.View(), reference::StepContext{9, static_cast<uint64_t>(step), true}, &mean));
      model.ZeroGrad();
      model.Backward();
    } else {
      model.ZeroGrad();
    }
    double loss = mean;
    if (comm != nullptr) {
      StepRows rows;
      SLUICE_RETURN_IF_ERROR(GatherStepRows(comm, mine.B, 0, &rows));
      if (rows.total_rows != kRows)
        return Status::InvalidArgument("rows over ranks " + std::to_string(rows.total_rows));
      SLUICE_RETURN_IF_ERROR(
          CombineGradients(comm, model.grads(), P, mine.B, rows.total_rows, &loss));
    }
    out->grads.emplace_back(model.grads(), model.grads() + P);
    reference::ClipByGlobalNorm(model.grads(), P, 1.0);
    adam.Step(model.params(), model.grads(), 3e-3);
    out->losses.push_back(loss);
  }
  out->params.assign(model.params(), model.params() + P);
  return Status::OK();
}

void RunSplit(comm::Communicator* comm, int first_rank_rows, const Trained& alone) {
  const int rank = comm->rank();
  const std::string split =
      "split " + std::to_string(first_rank_rows) + "/" + std::to_string(kRows - first_rank_rows);
  const int begin = rank == 0 ? 0 : first_rank_rows, end = rank == 0 ? first_rank_rows : kRows;
  Trained dp;
  const Status s = Train(comm, begin, end, &dp);
  if (!s.ok()) return Fail(rank, split + ": " + s.ToString());
  // Relative to the largest weight: AdamW moves every weight by about lr per step, so an
  // element-wise relative bound would be meaningless for weights that sit near 0.
  float scale = 0, worst = 0;
  for (size_t i = 0; i < alone.params.size(); ++i) {
    scale = std::max(scale, std::fabs(alone.params[i]));
    worst = std::max(worst, std::fabs(dp.params[i] - alone.params[i]));
  }
  std::printf("rank %d: %s: max |dp - single| = %.3g (largest weight %.3g)\n", rank, split.c_str(),
              worst, scale);
  // Same parameters at step 0; later steps differ by the accumulated rounding, which is what the
  // weight bound covers.
  for (int step = 0; step < kSteps; ++step) {
    float g_scale = 0, g_worst = 0;
    for (size_t i = 0; i < alone.params.size(); ++i) {
      g_scale = std::max(g_scale, std::fabs(alone.grads[step][i]));
      g_worst = std::max(g_worst, std::fabs(dp.grads[step][i] - alone.grads[step][i]));
    }
    if (!(g_worst <= 1e-5f * g_scale))
      Fail(rank, split + ": step " + std::to_string(step) + ": combined gradient differs by " +
                     std::to_string(g_worst) + " (largest element " + std::to_string(g_scale) +
                     ")");
  }
  if (!(worst <= 1e-5f * scale)) Fail(rank, split + ": weights differ from the single-process run");
  for (int step = 0; step < kSteps; ++step)
    if (!(std::fabs(dp.losses[step] - alone.losses[step]) <= 1e-5 * std::fabs(alone.losses[step])))
      Fail(rank, split + ": step " + std::to_string(step) + " loss " +
                     std::to_string(dp.losses[step]) + ", single-process " +
                     std::to_string(alone.losses[step]));
  const Status same = CheckSameParameters(comm, dp.params.data(), dp.params.size(), split);
  if (!same.ok()) Fail(rank, same.ToString());
}

int Main() {
  std::unique_ptr<comm::MpiCommunicator> comm;
  const Status s = comm::MpiCommunicator::Create(&comm);
  if (!s.ok()) {
    std::fprintf(stderr, "FAIL: %s\n", s.ToString().c_str());
    return 1;
  }
  if (comm->world() != 2) {
    std::fprintf(stderr, "FAIL: run with mpirun -np 2 (world is %d)\n", comm->world());
    return 1;
  }
  Trained alone;
  const Status a = Train(nullptr, 0, kRows, &alone);
  if (!a.ok()) Fail(comm->rank(), "single-process run: " + a.ToString());
  if (failures == 0) {
    RunSplit(comm.get(), kRows / 2, alone);
    RunSplit(comm.get(), 3, alone);
    RunSplit(comm.get(), 0, alone);  // rank 0 has no rows: zero gradient, still in every collective
  }
  if (failures == 0) std::printf("rank %d of %d: ok\n", comm->rank(), comm->world());
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace sluice::train

int main() { return sluice::train::Main(); }
