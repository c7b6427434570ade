// The CPU device backend of the SIMT layer (docs/gpu.md "The SIMT layer"): the subset of the CUDA
// runtime API that gpu/ uses, implemented on the host, so gpu/'s own host code (device.cc, the
// pinned allocator, CudaFeedBackend, the feeder) runs where there is no GPU.
//
// - One device (0). Device and pinned allocations are host memory; both are tracked, so a bad
//   free, a copy that overruns a device allocation and cudaPointerGetAttributes are answered as a
//   GPU would.
// - Every stream is an in-order worker thread with a queue: copies, memsets, event records, waits
//   on events and kernels (SLUICE_LAUNCH on the stream) run there, so work on two streams really
//   overlaps. The null stream runs everything on the caller before returning.
// - An async copy from or to pageable (not cudaHostAlloc'ed) host memory first waits for its
//   stream and copies on the caller, as the CUDA runtime stages it: it is not asynchronous.
// - Errors are cudaError_t values with CUDA's names and strings. A call's error is also this host
//   thread's last error (cudaGetLastError). A kernel that fails on a stream prints the SIMT
//   layer's message on stderr and returns cudaErrorLaunchFailure from the next synchronize of its
//   stream (or of an event after it, or the device), or from cudaGetLastError, whichever is first.
//
// C++ linkage on purpose: these never collide with libcudart's C symbols.
#pragma once

#include <cstddef>

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

cudaError_t cudaEventCreate(cudaEvent_t* event);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned flags);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream = nullptr);
cudaError_t cudaEventQuery(cudaEvent_t event);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end);
