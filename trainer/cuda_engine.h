// The CUDA engine of sluice-train --device cuda (docs/train.md, "On the GPU"): the training
// loader (pinned batch buffers) feeds gpu::Feeder, which copies each batch on its copy stream
// while the previous step computes; gpu/model's CudaModel runs forward and backward on the
// compute stream; with several ranks the gradient is weighted and averaged over NCCL in buckets
// as backward finishes them (comm/gradient_buckets.h); then clipping and CudaAdamW on the device.
// Built only where gpu/model is (SLUICE_HAVE_GPU_MODEL); CUDA-free header.
#pragma once

#include <memory>

#include "trainer/engine.h"
#include "comm/launch_env.h"
#include "loader/loader.h"
#include "loader/options.h"

namespace sluice::train {

// The process's share of the machine for a CUDA run: its GPU (LOCAL_RANK modulo the node's
// devices), the compute stream, and with several ranks the NCCL communicator on that stream
// (bootstrapped over MPI under mpirun, else NCCL's own MASTER_ADDR/MASTER_PORT rendezvous).
class CudaLaunch {
 public:
  // Unsupported, naming the CUDA runtime's error and with a HINT, where there is no usable GPU.
  static Status Open(const comm::LaunchEnv& env, std::unique_ptr<CudaLaunch>* out);
  ~CudaLaunch();
  const Ranks& ranks() const { return ranks_; }
  // Ends the whole job after an error on this rank, where the launcher cannot (MPI bootstrap):
  // the other ranks would wait in their next collective forever. No-op otherwise.
  void Abort(int code);

 private:
  struct State;
  CudaLaunch();
  std::unique_ptr<State> s_;
  Ranks ranks_;
};

// Loader options for the training loader of a CUDA run: pinned batch memory, and two batches the
// feeder may hold while their copies run (gpu/loader_source.h).
void ConfigureCudaLoader(loader::LoaderOptions* lo);

// `loader`: the training loader opened with ConfigureCudaLoader, outliving the engine.
Status MakeCudaEngine(const reference::ModelConfig& config, double weight_decay, const Ranks& ranks,
                      loader::Loader* loader, std::unique_ptr<Engine>* out);

}  // namespace sluice::train
