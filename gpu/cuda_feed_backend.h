// The FeedBackend over the CUDA runtime: a non-blocking copy stream of its own, the compute stream
// the trainer names (or one of its own), events created with cudaEventBlockingSync so a host
// waiting on a copy sleeps and leaves its core to the loader's decode threads.
#pragma once

#include <memory>

#include "base/status.h"
#include "gpu/feed_backend.h"

namespace sluice::gpu {

struct CudaFeedOptions {
  int device = -1;                 // cudaSetDevice first (-1: the current device)
  void* compute_stream = nullptr;  // a cudaStream_t the trainer computes on; nullptr: create one
};

// Unsupported (the probe's message) without a usable device; the runtime's errors otherwise.
Status MakeCudaFeedBackend(const CudaFeedOptions& options, std::unique_ptr<FeedBackend>* out);

}  // namespace sluice::gpu
