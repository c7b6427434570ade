// The CPU engine of sluice-train: reference/'s fp32 model on `threads` replica threads
// (replicas.h), AdamW on the host, gradients combined over MPI ranks (data_parallel.h).
#pragma once

#include <memory>

#include "trainer/engine.h"
#include "loader/loader.h"

namespace sluice::train {

// `loader` (the training loader, opened by the caller) must outlive the engine. `threads`
// replicas, dropout shares keyed from ranks.rank * threads.
std::unique_ptr<Engine> MakeCpuEngine(const reference::ModelConfig& config, int threads,
                                      double weight_decay, const Ranks& ranks,
                                      loader::Loader* loader);

}  // namespace sluice::train
