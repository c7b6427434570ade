// The device engines of sluice-train (docs/train.md, "On the GPU"): the training loader (pinned
// batch buffers) feeds gpu::Feeder, which copies each batch on its copy stream while the previous
// step computes; gpu/model's CudaModel runs forward and backward on the compute stream; with
// several ranks the gradient is weighted and averaged over NCCL in buckets as backward finishes
// them (comm/gradient_buckets.h); then clipping and CudaAdamW on the device.
//
// One source (cuda_engine.cc) is built twice: against the CUDA toolkit (`--device cuda`, where
// nvcc and cuBLASLt are found) and against the SIMT layer's CPU device backend (`--device simt`,
// where the toolkit's headers are found: the same kernels, feeder, GEMM calls and collectives,
// executed on the CPU; docs/gpu.md). Each build exports one backend table; a build that is absent
// answers nullptr. CUDA-free header.
#pragma once

#include <memory>
#include <string>

#include "comm/launch_env.h"
#include "loader/loader.h"
#include "loader/options.h"
#include "reference/model.h"
#include "trainer/engine.h"
#include "trainer/step_bench.h"

namespace sluice::train {

// The process's share of the machine for a device run: its device (LOCAL_RANK modulo the node's
// devices), the compute stream, and with several ranks the NCCL communicator on that stream
// (bootstrapped over MPI under mpirun, else NCCL's own MASTER_ADDR/MASTER_PORT rendezvous).
class DeviceLaunch {
 public:
  virtual ~DeviceLaunch() = default;
  virtual const Ranks& ranks() const = 0;
  // Ends the whole job after an error on this rank, where the launcher cannot (MPI bootstrap):
  // the other ranks would wait in their next collective forever. No-op otherwise.
  virtual void Abort(int code) = 0;
};

struct DeviceBackend {
  const char* device;  // the --device spelling: "cuda" or "simt"
  // Unsupported, naming the runtime's error and with a HINT, where there is no usable device.
  Status (*open)(const comm::LaunchEnv& env, std::unique_ptr<DeviceLaunch>* out);
  // Loader options for the training loader: pinned batch memory, and two batches the feeder may
  // hold while their copies run (gpu/loader_source.h).
  void (*configure_loader)(loader::LoaderOptions* lo);
  // `loader`: the training loader opened with configure_loader, outliving the engine.
  Status (*make_engine)(const reference::ModelConfig& config, double weight_decay,
                        const Ranks& ranks, loader::Loader* loader,
                        std::unique_ptr<Engine>* out);
  // sluice-bench step: options.warmup_steps + options.steps training steps of a synthetic batch
  // on this process's first device (step_bench.h).
  Status (*bench_step)(const StepBenchOptions& options, StepBenchResult* out);
};

// nullptr where that build of the engine is not part of this sluice-train.
const DeviceBackend* CudaBackend();
const DeviceBackend* SimtBackend();
// The backend for a --device value other than "cpu", or nullptr.
const DeviceBackend* FindDeviceBackend(const std::string& device);

}  // namespace sluice::train
