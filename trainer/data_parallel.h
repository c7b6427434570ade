// Data parallelism across processes for sluice-train: every rank holds the whole model, trains on
// its own partition of each epoch (the loader's rank/world), and the ranks combine their
// gradients through a comm::Communicator (MPI on CPUs) so that every rank applies the same update
// and the weights stay identical, bit for bit, without ever being sent.
//
// A step on every rank:
//   GatherStepRows  -> every rank's row count (a rank may have 0);
//                      the total N; no step anywhere when N is 0
//   forward/backward of this rank's rows' mean loss (zero gradient for 0 rows)
//   CombineGradients -> the gradient of the mean loss over all N rows, the same bits everywhere
//   clip, AdamW: deterministic functions of identical inputs, so identical results
//
// Every call here is a collective: all ranks call it, in the same order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "comm/communicator.h"

namespace sluice::train {

// all[r * k + i] <- rank r's mine[i], on every rank. An all-gather made of the interface's one
// integer collective (AllReduceMaxHost): each rank fills its own row and INT64_MIN elsewhere.
// Exact, so it also carries doubles' bit patterns (std::bit_cast).
Status AllGatherHost(comm::Communicator* comm, const int64_t* mine, size_t k,
                     std::vector<int64_t>* all);
// Every rank's string, in rank order (two AllGatherHost calls: the lengths, then the bytes).
// For small reports (the keys an epoch line names), not for data. Strings must hold no NUL.
Status AllGatherStrings(comm::Communicator* comm, const std::string& mine,
                        std::vector<std::string>* all);

struct StepRows {
  int64_t total_rows = 0;    // rows over all ranks
  int64_t total_frames = 0;  // their valid feature frames
};
// Every rank's rows and frames for this step, summed in rank order.
Status GatherStepRows(comm::Communicator* comm, int64_t rows, int64_t frames, StepRows* out);

// On entry: grads[0, count) is the gradient of the mean loss over this rank's `rows` rows (zeros
// for 0 rows) and *loss that mean. On return, on every rank: grads is the gradient of the mean over
// all ranks' rows, sum_r rows_r * grad_r / total_rows, and *loss the mean loss over them.
// `total_rows` (> 0) comes from GatherStepRows. Each rank scales its gradient by
// rows * world / total_rows before the average, so equal shares (scale exactly 1) average the
// plain gradients. Memory is host memory (an MPI communicator).
Status CombineGradients(comm::Communicator* comm, float* grads, size_t count, int64_t rows,
                        int64_t total_rows, double* loss);

// The two halves of CombineGradients for a device whose gradient lives elsewhere (the CUDA
// trainer scales it on the GPU and averages it in buckets over NCCL): the factor each rank
// multiplies its gradient by before the average, rows * world / total_rows in double (exactly 1
// for equal shares); and the loss: *loss (this rank's mean) <- the mean over all rows, a
// collective.
double GradientScale(int world, int64_t rows, int64_t total_rows);
Status CombineLoss(comm::Communicator* comm, double scale, double* loss);

// Sums int64 counters over ranks (values[i] <- sum over ranks), in rank order: the same on every
// rank. Doubles travel as bit patterns: SumDoubles adds them in rank order, so the result is the
// same bits everywhere.
Status SumOverRanks(comm::Communicator* comm, int64_t* values, size_t count);
Status SumDoubles(comm::Communicator* comm, double* values, size_t count);

// Guards the invariant that makes the scheme work: the parameters are the same on every rank.
// XXH3 of params[0, count) gathered from every rank; InvalidArgument naming `where` and each
// rank's checksum when they differ (an MPI reduction that rounded differently per rank, or a
// rank that resumed from another checkpoint).
Status CheckSameParameters(comm::Communicator* comm, const float* params, size_t count,
                           const std::string& where);

}  // namespace sluice::train
