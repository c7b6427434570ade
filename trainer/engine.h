// Engine: what the sluice-train loop (trainer.cc) needs from the device that computes a step.
// Two implementations: CpuEngine (cpu_engine.h: reference/ replicas on threads) and CudaEngine
// (cuda_engine.h: gpu/model's CudaModel fed by gpu::Feeder, gradients over NCCL). The loop,
// options, checkpoints, evaluation and logging are shared; an engine owns only how batches reach
// the model, how a step runs and where parameters and AdamW moments live.
//
// Per epoch:  StartEpoch(at); while (Next(&b, &end), !end) { ...; Step(..., &out) }; Flush(&out)
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "trainer/alignment.h"
#include "trainer/checkpoint.h"
#include "comm/communicator.h"
#include "reference/model.h"
#include "loader/batch.h"
#include "loader/resume.h"

namespace sluice::train {

// This process among the training ranks; comm is null in a single-process run, which then makes
// no collective call at all. `stream` is the CUDA compute stream the launcher set-up created (the
// one the NCCL communicator enqueues on); null on the CPU.
struct Ranks {
  int rank = 0;
  int world = 1;
  int local_rank = 0;
  comm::Communicator* comm = nullptr;
  void* stream = nullptr;
};

// The batch an engine's Next took, as the loop sees it.
struct StepBatch {
  uint64_t index = 0;             // position in this rank's epoch
  int64_t rows = 0;               // rows that train; a rank with 0 still joins the step
  int64_t frames = 0;             // their valid feature frames
  double wait_seconds = 0;        // data wait: host time blocked in the loader (CPU), or GPU time
                                  // the compute stream starved (CUDA, measured by the feeder)
  std::vector<Unalignable> unalignable;  // this rank's rows CTC cannot align (alignment.h)
};

// Rows of `batch` that train: all of them (--eval-fraction's held-out records are left out of the
// training loader's plan, not out of its batches). *frames is the sum of their lengths.
inline void TrainingRows(const loader::Batch& batch, std::vector<int>* rows, int64_t* frames) {
  rows->clear();
  *frames = 0;
  for (size_t r = 0; r < batch.size(); ++r) {
    rows->push_back(static_cast<int>(r));
    *frames += batch.lengths()[r];
  }
}

// What a step gave once it ended: the mean loss over all ranks' rows and the gradient norm before
// clipping, or the error the device found in its batch (frames or labels out of range).
struct StepOutcome {
  bool valid = false;        // false: no step ended in this call
  uint64_t batch_index = 0;  // StepBatch::index of the step's batch
  double loss = 0;
  double grad_norm = 0;
  Status status;
};

class Engine {
 public:
  virtual ~Engine() = default;

  virtual size_t num_parameters() const = 0;
  // A line for the run's header: "cpu, 2 replica threads", "NVIDIA H100 ... (sm_90, 79.1 GiB)".
  virtual std::string Describe() const = 0;

  // Parameters: fresh (reference::Model::InitParameters's values on every engine), or from a
  // checkpoint (params, adam_m, adam_v, adam_step; sizes already checked against the model).
  virtual Status Init(uint64_t seed) = 0;
  virtual Status Restore(const Checkpoint& c) = 0;
  // Fills params, adam_step, adam_m and adam_v of *c (device engines download them).
  virtual Status Snapshot(Checkpoint* c) = 0;

  // Starts the training loader where `at` says (Loader::Start: an epoch's first batch, a
  // resume, or a state saved at another world size) and whatever feeds the device from it.
  virtual Status StartEpoch(const loader::ResumeState& at) = 0;
  // The number of batches of the started epoch (Loader::num_batches()).
  virtual uint64_t num_batches() const = 0;
  // The next batch of the epoch, or *end. The batch stays the current one until the next call.
  virtual Status Next(StepBatch* batch, bool* end) = 0;
  // Where a resume continues after the batches taken so far (not the loader's read-ahead).
  virtual loader::ResumeState Position() const = 0;

  // One optimizer step on the current batch's rows: gradient of their mean CTC loss (dropout keyed
  // by seed and step), combined over ranks into the gradient of the mean over `total_rows` rows
  // (data_parallel.h), clipped to `clip`, AdamW with learning rate lr. *flops: the model FLOPs
  // this rank's step takes (0 where not estimated). *finished: the outcome of a step that ended,
  // which a device engine gives one call late (the previous step's: reading this step's loss
  // would make the host wait for the GPU to finish it before it can enqueue the next) and the CPU
  // engine at once. A returned error is this step's (the caller names its batch); an error the
  // device found in a batch comes in its outcome.
  virtual Status Step(int64_t total_rows, uint64_t seed, uint64_t step, double clip, double lr,
                      double* flops, StepOutcome* finished) = 0;
  // The outcome of the step still running, if any (waiting for it): before anything reads what
  // the steps so far did (a checkpoint, an evaluation, the end of the epoch or of the run).
  virtual Status Flush(StepOutcome* finished) {
    *finished = StepOutcome();
    return Status::OK();
  }

  // Forward only (no dropout) over rows of a host batch (the evaluation loader's). For each row:
  // its position in `rows`, its loss and log-probabilities [frames, vocab], in row order.
  using RowFn = std::function<Status(int index, double loss, const float* log_probs, int frames)>;
  virtual Status EvaluateRows(const loader::Batch& batch, const std::vector<int>& rows,
                              const RowFn& fn) = 0;

  // The device's dense bf16 peak in FLOP/s for the MFU estimate; 0 where none is known (the CPU).
  virtual double peak_flops() const { return 0; }

  // Since Init: GEMM calls that ran the slow fallback kernel, and calls with operands aligned to
  // fewer than 16 bytes (gpu/model/gemm.h); -1 where the engine has no such GEMMs (the CPU).
  struct GemmCounts {
    int64_t fallbacks = -1;
    int64_t under_aligned = -1;
  };
  virtual GemmCounts gemm_counts() const { return {}; }
};

}  // namespace sluice::train
