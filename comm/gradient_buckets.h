// GradientBuckets: data-parallel gradient averaging that overlaps backward.
//
// The trainer keeps every gradient in one flat float buffer laid out in reverse layer order, so
// backward, which finishes the last layer first, fills it from offset 0 upward. The buffer is cut
// into buckets of `bucket_elements`; as backward marks tensors done, each bucket whose elements
// are all done is handed to a ReduceLane (NCCL stream or MPI thread) while backward goes on with
// the earlier layers. Buckets are submitted strictly in index order (bucket i never before i-1),
// so every rank issues the same sequence of collectives whatever order its tensors finish in,
// which is what keeps NCCL and MPI from deadlocking.
//
//   GradientBuckets buckets(grads, n, bucket_elements, lane);
//   per step:  for each tensor as backward finishes it: buckets.MarkReady(offset, count);
//              buckets.Finish();   // all averaged (MPI) / the stream waits for them (NCCL)
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/status.h"
#include "comm/communicator.h"

namespace sluice::comm {

class GradientBuckets {
 public:
  // `grads`: count floats (device memory for NCCL lanes); bucket_elements >= 1. 25 MiB of floats
  // (6.5 M) is the usual size: large enough to reach full bandwidth, small enough to overlap.
  GradientBuckets(float* grads, size_t count, size_t bucket_elements, ReduceLane* lane);

  // grads[offset, offset + count) is final for this step. Submits every bucket that became
  // complete, in order. InvalidArgument for a range outside the buffer, or one that marks a
  // bucket past its size (a tensor marked twice).
  Status MarkReady(size_t offset, size_t count);
  // Every element must have been marked; waits for the lane, then resets for the next step.
  Status Finish();

  size_t num_buckets() const { return remaining_.size(); }
  size_t bucket_elements() const { return bucket_; }
  // Buckets submitted so far this step, in submission order (tests, tracing).
  const std::vector<uint32_t>& submitted() const { return submitted_; }

 private:
  float* grads_;
  size_t count_;
  size_t bucket_;
  ReduceLane* lane_;
  std::vector<size_t> remaining_;   // per bucket: elements not yet marked
  std::vector<uint32_t> submitted_;
  size_t next_ = 0;                 // next bucket to submit
  size_t marked_total_ = 0;
};

}  // namespace sluice::comm
