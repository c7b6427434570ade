// The CPU device backend of the SIMT layer (docs/gpu.md "The SIMT layer"): the subset of the CUDA
// runtime API that gpu/ uses, implemented on the host, so gpu/'s own host code (device.cc, the
// pinned allocator, CudaFeedBackend, the feeder, the NCCL communicator) runs where there is no GPU.
//
// - kDeviceCount devices, so that ranks run as threads of one process each have a device of their
//   own, as on a node with that many GPUs: cudaSetDevice is per host thread (default 0); a stream,
//   an event and an allocation belong to the device current when it was created. Device and pinned
//   allocations are host memory; both are tracked, so a bad free, a copy that overruns a device
//   allocation and cudaPointerGetAttributes are answered as a GPU would.
// - Every stream is an in-order worker thread with a queue: copies, memsets, event records, waits
//   on events, host functions and kernels (SLUICE_LAUNCH on the stream) run there, so work on two
//   streams really overlaps.
// - The null stream is CUDA's legacy default stream: its work (and cudaMemcpy, cudaMemset,
//   cudaStreamSynchronize(0)) runs on the caller after the work already queued on the device's
//   blocking streams (cudaStreamCreate), and never waits for streams created with
//   cudaStreamNonBlocking, whose races with it a GPU would show too. cudaDeviceSynchronize waits
//   for every stream of the current device.
// - cudaFree waits for every stream of the allocation's device, and cudaFreeHost for every stream
//   of the current device, as CUDA's implicitly synchronising frees do: work still queued cannot
//   use freed memory.
// - Work running on a stream (a host function, a kernel) must not call the CUDA API, as in CUDA:
//   a call that would queue work or wait for a stream returns cudaErrorNotPermitted there
//   instead of deadlocking on the stream it runs on.
// - An async copy from or to pageable (not cudaHostAlloc'ed) host memory first waits for its
//   stream and copies on the caller, as the CUDA runtime stages it: it is not asynchronous.
// - Errors are cudaError_t values with CUDA's names and strings. A call's error is also this host
//   thread's last error (cudaGetLastError takes it, cudaPeekAtLastError reads it). A launch the
//   layer refuses (a bad configuration, dynamic shared memory over 48 KiB, a malformed
//   SLUICE_SIMT_ORDER) is the launch's error, reported by cudaGetLastError right after it, not
//   queued, and harmless to the device (as CUDA's cudaErrorInvalidConfiguration/InvalidValue).
// - A kernel that fails (the SIMT layer's checks: a divergent barrier, a bad shuffle mask, a thread
//   that throws) is a device fault, modelled on CUDA's sticky cudaErrorLaunchFailure: the message
//   goes to stderr, and from then on the device is unusable for the rest of the process: every
//   later call that reports errors returns cudaErrorLaunchFailure (cudaGetLastError included;
//   taking it does not clear it), work already queued on the device's streams is dropped (event
//   records still complete, so no waiter hangs), frees and destroys still release what they are
//   given. Other devices go on. CUDA's only way out, cudaDeviceReset, is not offered: a test
//   that makes a kernel fail does it on a device of its own.
//
// C++ linkage on purpose: these never collide with libcudart's C symbols.
#pragma once

#include <cstddef>
#include <functional>

#include "base/status.h"

using cudaStream_t = struct CUstream_st*;
using cudaEvent_t = struct CUevent_st*;

// The values are CUDA's (driver_types.h), so messages print the same numbers.
enum cudaError {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInsufficientDriver = 35,
  cudaErrorNoDevice = 100,
  cudaErrorInvalidDevice = 101,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorNotReady = 600,
  cudaErrorLaunchFailure = 719,
  cudaErrorNotPermitted = 800,
};
using cudaError_t = cudaError;

enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,
};

enum cudaMemoryType {
  cudaMemoryTypeUnregistered = 0,
  cudaMemoryTypeHost = 1,
  cudaMemoryTypeDevice = 2,
  cudaMemoryTypeManaged = 3,
};

struct cudaPointerAttributes {
  cudaMemoryType type;
  int device;
  void* devicePointer;
  void* hostPointer;
};

// The fields gpu/ reads.
struct cudaDeviceProp {
  char name[256];
  size_t totalGlobalMem;
  int major;
  int minor;
  int multiProcessorCount;
};

inline constexpr unsigned cudaStreamDefault = 0x00;
inline constexpr unsigned cudaStreamNonBlocking = 0x01;
inline constexpr unsigned cudaEventDefault = 0x00;
inline constexpr unsigned cudaEventBlockingSync = 0x01;
inline constexpr unsigned cudaEventDisableTiming = 0x02;
inline constexpr unsigned cudaHostAllocDefault = 0x00;
inline constexpr unsigned cudaHostAllocPortable = 0x01;

const char* cudaGetErrorString(cudaError_t error);
const char* cudaGetErrorName(cudaError_t error);
cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();

cudaError_t cudaGetDeviceCount(int* count);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDevice(int* device);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device);
cudaError_t cudaDeviceSynchronize();

cudaError_t cudaMalloc(void** ptr, size_t bytes);
cudaError_t cudaFree(void* ptr);
cudaError_t cudaHostAlloc(void** ptr, size_t bytes, unsigned flags);
cudaError_t cudaMallocHost(void** ptr, size_t bytes);
cudaError_t cudaFreeHost(void* ptr);
// The typed forms cuda_runtime.h adds for C++ callers (cudaMalloc(&int_ptr, n) and the like).
template <typename T>
cudaError_t cudaMalloc(T** ptr, size_t bytes) {
  return cudaMalloc(reinterpret_cast<void**>(ptr), bytes);
}
template <typename T>
cudaError_t cudaHostAlloc(T** ptr, size_t bytes, unsigned flags) {
  return cudaHostAlloc(reinterpret_cast<void**>(ptr), bytes, flags);
}
template <typename T>
cudaError_t cudaMallocHost(T** ptr, size_t bytes) {
  return cudaMallocHost(reinterpret_cast<void**>(ptr), bytes);
}
cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attributes, const void* ptr);

cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream = nullptr);
cudaError_t cudaMemset(void* dst, int value, size_t bytes);
cudaError_t cudaMemsetAsync(void* dst, int value, size_t bytes, cudaStream_t stream = nullptr);

cudaError_t cudaStreamCreate(cudaStream_t* stream);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaStreamQuery(cudaStream_t stream);
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned flags = 0);
// Runs fn(user_data) on the stream's worker, in stream order (on the caller for the null
// stream). The CPU backends of cuBLASLt and NCCL queue their work through it, as CUDA's host
// functions do: fn must not call the CUDA API.
using cudaHostFn_t = void (*)(void* user_data);
cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* user_data);

namespace sluice::simt {

// How many devices the backend has (cudaGetDeviceCount): ranks of a test or of an in-process run
// take one each (LOCAL_RANK modulo this, as gpu/ picks a GPU). As many as the largest nodes have,
// so that a test process has spare devices for the tests whose faults spoil one.
inline constexpr int kDeviceCount = 16;

// Not CUDA: cudaLaunchHostFunc for work that can fail, as the device code of a CUDA library can
// (an NCCL collective whose peer is gone). A task that returns an error fails its device as a
// failed kernel does (sticky cudaErrorLaunchFailure, the message on stderr). For the CPU backends
// of CUDA libraries (gpu/simt/nccl_host.cc); `task` must not call the CUDA API.
cudaError_t LaunchHostTask(cudaStream_t stream, std::function<Status()> task);

// Not CUDA: how many times this host thread has waited for device work (cudaStreamSynchronize,
// cudaEventSynchronize, cudaDeviceSynchronize, cudaMemcpy), for tests that keep waits off the
// per-step path (a wait there leaves the GPU idle while the host enqueues what follows).
uint64_t HostWaits();

}  // namespace sluice::simt

cudaError_t cudaEventCreate(cudaEvent_t* event);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned flags);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream = nullptr);
cudaError_t cudaEventQuery(cudaEvent_t event);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end);
