#include "gpu/simt/cuda_runtime_host.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <set>
#include <thread>
#include <utility>

#include "gpu/simt/runtime.h"

namespace {

using Task = std::function<cudaError_t()>;

uint64_t NowNs() { return sluice::simt::GlobalTimerNs(); }

// The first error of work that ran on a stream worker, until a synchronize or cudaGetLastError
// takes it (CUDA reports asynchronous errors the same way: at the next call that can).
std::mutex g_async_mu;
cudaError_t g_async_error = cudaSuccess;

void SetAsyncError(cudaError_t e) {
  std::lock_guard<std::mutex> lock(g_async_mu);
  if (g_async_error == cudaSuccess) g_async_error = e;
}
cudaError_t TakeAsyncError() {
  std::lock_guard<std::mutex> lock(g_async_mu);
  return std::exchange(g_async_error, cudaSuccess);
}

thread_local cudaError_t t_last_error = cudaSuccess;

// Every API call returns through here, so its error is also the thread's last error.
cudaError_t Ret(cudaError_t e) {
  if (e != cudaSuccess) t_last_error = e;
  return e;
}

// What an event's records have reached. Shared with the tasks that complete or wait for it, so
// destroying an event with work still queued is safe, as in CUDA.
struct EventState {
  unsigned flags = 0;
  uint64_t recorded = 0;  // records issued
  uint64_t done = 0;      // records completed (they complete in order per stream)
  uint64_t time_ns = 0;   // when the last completed record was reached
};
std::mutex g_event_mu;
std::condition_variable g_event_cv;

void WaitEvent(const EventState& e, uint64_t generation) {
  std::unique_lock<std::mutex> lock(g_event_mu);
  g_event_cv.wait(lock, [&] { return e.done >= generation; });
}

// Device and pinned allocations, by base address.
std::mutex g_mem_mu;
std::map<uintptr_t, size_t> g_device;
std::map<uintptr_t, size_t> g_pinned;
constexpr size_t kDeviceAlignment = 256;  // what cudaMalloc guarantees
constexpr size_t kPageAlignment = 4096;

// True when [p, p + bytes) lies inside one allocation of `m` (callers hold g_mem_mu).
bool Inside(const std::map<uintptr_t, size_t>& m, const void* p, size_t bytes) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  auto it = m.upper_bound(a);
  if (it == m.begin()) return false;
  --it;
  return a - it->first < std::max<size_t>(it->second, 1) && a + bytes <= it->first + it->second;
}
bool IsDevice(const void* p, size_t bytes) {
  std::lock_guard<std::mutex> lock(g_mem_mu);
  return Inside(g_device, p, bytes);
}
bool IsPinned(const void* p, size_t bytes) {
  std::lock_guard<std::mutex> lock(g_mem_mu);
  return Inside(g_pinned, p, bytes);
}

// cudaMalloc and cudaHostAlloc: host memory, recorded in `m` (g_device or g_pinned).
cudaError_t Allocate(std::map<uintptr_t, size_t>* m, size_t alignment, void** ptr, size_t bytes) {
  if (ptr == nullptr) return Ret(cudaErrorInvalidValue);
  *ptr = nullptr;
  if (bytes == 0) return cudaSuccess;
  void* p = ::operator new(bytes, std::align_val_t(alignment), std::nothrow);
  if (p == nullptr) return Ret(cudaErrorMemoryAllocation);
  std::lock_guard<std::mutex> lock(g_mem_mu);
  m->emplace(reinterpret_cast<uintptr_t>(p), bytes);
  *ptr = p;
  return cudaSuccess;
}
// cudaFree and cudaFreeHost: a pointer `m` does not hold is an error, as on a GPU.
cudaError_t Release(std::map<uintptr_t, size_t>* m, size_t alignment, void* ptr) {
  if (ptr == nullptr) return cudaSuccess;
  {
    std::lock_guard<std::mutex> lock(g_mem_mu);
    if (m->erase(reinterpret_cast<uintptr_t>(ptr)) == 0) return Ret(cudaErrorInvalidValue);
  }
  ::operator delete(ptr, std::align_val_t(alignment));
  return cudaSuccess;
}

}  // namespace

// A stream: an in-order queue drained by its own worker thread.
struct CUstream_st {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Task> queue;
  uint64_t enqueued = 0;
  uint64_t completed = 0;
  bool stop = false;
  std::thread worker;

  void Work() {
    std::unique_lock<std::mutex> lock(mu);
    while (true) {
      cv.wait(lock, [&] { return stop || !queue.empty(); });
      if (queue.empty()) return;
      Task task = std::move(queue.front());
      queue.pop_front();
      lock.unlock();
      const cudaError_t e = task();
      if (e != cudaSuccess) SetAsyncError(e);
      lock.lock();
      ++completed;
      cv.notify_all();
    }
  }
  void Enqueue(Task task) {
    std::lock_guard<std::mutex> lock(mu);
    queue.push_back(std::move(task));
    ++enqueued;
    cv.notify_all();
  }
  void Drain() {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return completed == enqueued; });
  }
};

struct CUevent_st {
  std::shared_ptr<EventState> state = std::make_shared<EventState>();
};

namespace {

std::mutex g_stream_mu;
std::set<cudaStream_t> g_streams;

bool KnownStream(cudaStream_t s) {
  std::lock_guard<std::mutex> lock(g_stream_mu);
  return s == nullptr || g_streams.count(s) != 0;
}

// Runs `task` in the stream's order: queued on a stream, at once on the null stream.
cudaError_t Submit(cudaStream_t stream, Task task) {
  if (!KnownStream(stream)) return Ret(cudaErrorInvalidResourceHandle);
  if (stream == nullptr) return Ret(task());
  stream->Enqueue(std::move(task));
  return cudaSuccess;
}

// SLUICE_LAUNCH on a stream (sluice::simt::StreamHook).
void EnqueueGrid(void* stream, const char* kernel, sluice::simt::GridTask grid) {
  if (!KnownStream(static_cast<cudaStream_t>(stream))) {
    // As CUDA reports a launch on a destroyed stream: at launch, through cudaGetLastError.
    std::fprintf(stderr, "sluice: simt: kernel %s launched on an unknown stream\n", kernel);
    Ret(cudaErrorInvalidResourceHandle);
    return;
  }
  static_cast<cudaStream_t>(stream)->Enqueue([grid = std::move(grid)] {
    const sluice::Status st = grid();
    if (st.ok()) return cudaSuccess;
    std::fprintf(stderr, "sluice: simt: %s\n", st.ToString().c_str());
    return cudaErrorLaunchFailure;
  });
}

struct ErrorText {
  cudaError_t error;
  const char* name;
  const char* text;  // CUDA's own wording
};
constexpr ErrorText kErrors[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration",
     "invalid configuration argument"},
    {cudaErrorInsufficientDriver, "cudaErrorInsufficientDriver",
     "CUDA driver version is insufficient for CUDA runtime version"},
    {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle",
     "invalid resource handle"},
    {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
    {cudaErrorLaunchFailure, "cudaErrorLaunchFailure", "unspecified launch failure"},
};
const ErrorText* Find(cudaError_t e) {
  for (const ErrorText& t : kErrors) {
    if (t.error == e) return &t;
  }
  return nullptr;
}

cudaError_t CheckCopy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  if (bytes == 0) return cudaSuccess;
  if (dst == nullptr || src == nullptr) return cudaErrorInvalidValue;
  const bool dst_device = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  const bool src_device = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  if (kind < cudaMemcpyHostToHost || kind > cudaMemcpyDefault) return cudaErrorInvalidValue;
  if (dst_device && !IsDevice(dst, bytes)) return cudaErrorInvalidValue;
  if (src_device && !IsDevice(src, bytes)) return cudaErrorInvalidValue;
  return cudaSuccess;
}

}  // namespace

const char* cudaGetErrorString(cudaError_t error) {
  const ErrorText* t = Find(error);
  return t != nullptr ? t->text : "unrecognized error code";
}
const char* cudaGetErrorName(cudaError_t error) {
  const ErrorText* t = Find(error);
  return t != nullptr ? t->name : "cudaErrorUnknown";
}

cudaError_t cudaGetLastError() {
  const cudaError_t e = std::exchange(t_last_error, cudaSuccess);
  return e != cudaSuccess ? e : TakeAsyncError();
}
cudaError_t cudaPeekAtLastError() {
  if (t_last_error != cudaSuccess) return t_last_error;
  std::lock_guard<std::mutex> lock(g_async_mu);
  return g_async_error;
}

cudaError_t cudaGetDeviceCount(int* count) {
  if (count == nullptr) return Ret(cudaErrorInvalidValue);
  *count = 1;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) {
  return device == 0 ? cudaSuccess : Ret(cudaErrorInvalidDevice);
}
cudaError_t cudaGetDevice(int* device) {
  if (device == nullptr) return Ret(cudaErrorInvalidValue);
  *device = 0;
  return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (prop == nullptr) return Ret(cudaErrorInvalidValue);
  if (device != 0) return Ret(cudaErrorInvalidDevice);
  *prop = cudaDeviceProp{};
  std::snprintf(prop->name, sizeof(prop->name), "sluice SIMT device (CPU)");
  prop->totalGlobalMem =
      static_cast<size_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<size_t>(sysconf(_SC_PAGESIZE));
  prop->major = 8;  // the oldest architecture the nvcc build targets (sm_80)
  prop->minor = 0;
  prop->multiProcessorCount = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize() {
  std::vector<cudaStream_t> streams;
  {
    std::lock_guard<std::mutex> lock(g_stream_mu);
    streams.assign(g_streams.begin(), g_streams.end());
  }
  for (cudaStream_t s : streams) s->Drain();
  return Ret(TakeAsyncError());
}

cudaError_t cudaMalloc(void** ptr, size_t bytes) {
  return Allocate(&g_device, kDeviceAlignment, ptr, bytes);
}
cudaError_t cudaFree(void* ptr) { return Release(&g_device, kDeviceAlignment, ptr); }
cudaError_t cudaHostAlloc(void** ptr, size_t bytes, unsigned flags) {
  if (flags > 0x0f) return Ret(cudaErrorInvalidValue);
  return Allocate(&g_pinned, kPageAlignment, ptr, bytes);
}
cudaError_t cudaMallocHost(void** ptr, size_t bytes) {
  return cudaHostAlloc(ptr, bytes, cudaHostAllocDefault);
}
cudaError_t cudaFreeHost(void* ptr) { return Release(&g_pinned, kPageAlignment, ptr); }
cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attributes, const void* ptr) {
  if (attributes == nullptr) return Ret(cudaErrorInvalidValue);
  void* p = const_cast<void*>(ptr);
  if (IsDevice(ptr, 0)) {
    *attributes = {cudaMemoryTypeDevice, 0, p, nullptr};
  } else if (IsPinned(ptr, 0)) {
    *attributes = {cudaMemoryTypeHost, 0, p, p};
  } else {
    *attributes = {cudaMemoryTypeUnregistered, -2, nullptr, nullptr};
  }
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  const cudaError_t e = CheckCopy(dst, src, bytes, kind);
  if (e != cudaSuccess) return Ret(e);
  // Like CUDA's blocking copy: it follows the work already queued on the device.
  const cudaError_t sync = cudaDeviceSynchronize();
  if (bytes != 0) std::memmove(dst, src, bytes);
  return sync;
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream) {
  const cudaError_t e = CheckCopy(dst, src, bytes, kind);
  if (e != cudaSuccess) return Ret(e);
  if (!KnownStream(stream)) return Ret(cudaErrorInvalidResourceHandle);
  if (bytes == 0) return cudaSuccess;
  const bool pageable = (kind == cudaMemcpyHostToDevice && !IsPinned(src, bytes)) ||
                        (kind == cudaMemcpyDeviceToHost && !IsPinned(dst, bytes));
  if (pageable && stream != nullptr) {
    // Staged through the runtime, as CUDA does from pageable memory: the caller may reuse its
    // buffer once the call returns, so the copy happens now, after the stream's earlier work.
    stream->Drain();
    std::memmove(dst, src, bytes);
    return cudaSuccess;
  }
  return Submit(stream, [dst, src, bytes] {
    std::memmove(dst, src, bytes);
    return cudaSuccess;
  });
}
cudaError_t cudaMemsetAsync(void* dst, int value, size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return cudaSuccess;
  if (!IsDevice(dst, bytes)) return Ret(cudaErrorInvalidValue);
  return Submit(stream, [dst, value, bytes] {
    std::memset(dst, value, bytes);
    return cudaSuccess;
  });
}
cudaError_t cudaMemset(void* dst, int value, size_t bytes) {
  const cudaError_t e = cudaMemsetAsync(dst, value, bytes, nullptr);
  return e != cudaSuccess ? e : cudaDeviceSynchronize();
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned flags) {
  if (stream == nullptr || flags > cudaStreamNonBlocking) return Ret(cudaErrorInvalidValue);
  sluice::simt::SetStreamHook(&EnqueueGrid);
  auto* s = new CUstream_st();
  s->worker = std::thread([s] { s->Work(); });
  std::lock_guard<std::mutex> lock(g_stream_mu);
  g_streams.insert(s);
  *stream = s;
  return cudaSuccess;
}
cudaError_t cudaStreamCreate(cudaStream_t* stream) {
  return cudaStreamCreateWithFlags(stream, cudaStreamDefault);
}
cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  {
    std::lock_guard<std::mutex> lock(g_stream_mu);
    if (stream == nullptr || g_streams.erase(stream) == 0) {
      return Ret(cudaErrorInvalidResourceHandle);
    }
  }
  // CUDA lets queued work finish after the call; the worker does, then stops.
  {
    std::lock_guard<std::mutex> lock(stream->mu);
    stream->stop = true;
    stream->cv.notify_all();
  }
  stream->worker.join();
  delete stream;
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  if (!KnownStream(stream)) return Ret(cudaErrorInvalidResourceHandle);
  if (stream == nullptr) return cudaDeviceSynchronize();  // the legacy stream: all work
  stream->Drain();
  return Ret(TakeAsyncError());
}
cudaError_t cudaStreamQuery(cudaStream_t stream) {
  if (!KnownStream(stream)) return Ret(cudaErrorInvalidResourceHandle);
  if (stream == nullptr) return cudaSuccess;
  std::lock_guard<std::mutex> lock(stream->mu);
  return stream->completed == stream->enqueued ? cudaSuccess : cudaErrorNotReady;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned flags) {
  if (event == nullptr || flags != 0) return Ret(cudaErrorInvalidValue);
  std::shared_ptr<EventState> state = event->state;
  uint64_t generation;
  {
    std::lock_guard<std::mutex> lock(g_event_mu);
    generation = state->recorded;  // the most recent record; none recorded: nothing to wait for
  }
  return Submit(stream, [state, generation] {
    WaitEvent(*state, generation);
    return cudaSuccess;
  });
}

cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* user_data) {
  if (fn == nullptr) return Ret(cudaErrorInvalidValue);
  return Submit(stream, [fn, user_data] {
    fn(user_data);
    return cudaSuccess;
  });
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned flags) {
  if (event == nullptr || flags > 0x0f) return Ret(cudaErrorInvalidValue);
  *event = new CUevent_st();
  (*event)->state->flags = flags;
  return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t* event) {
  return cudaEventCreateWithFlags(event, cudaEventDefault);
}
cudaError_t cudaEventDestroy(cudaEvent_t event) {
  if (event == nullptr) return Ret(cudaErrorInvalidResourceHandle);
  delete event;
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  if (event == nullptr) return Ret(cudaErrorInvalidResourceHandle);
  if (!KnownStream(stream)) return Ret(cudaErrorInvalidResourceHandle);
  std::shared_ptr<EventState> state = event->state;
  uint64_t generation;
  {
    std::lock_guard<std::mutex> lock(g_event_mu);
    generation = ++state->recorded;
  }
  return Submit(stream, [state, generation] {
    {
      std::lock_guard<std::mutex> lock(g_event_mu);
      state->done = std::max(state->done, generation);
      state->time_ns = NowNs();
    }
    g_event_cv.notify_all();
    return cudaSuccess;
  });
}
cudaError_t cudaEventQuery(cudaEvent_t event) {
  if (event == nullptr) return Ret(cudaErrorInvalidResourceHandle);
  std::lock_guard<std::mutex> lock(g_event_mu);
  // Not ready is an answer, not an error: it does not become the last error.
  return event->state->done >= event->state->recorded ? cudaSuccess : cudaErrorNotReady;
}
cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  if (event == nullptr) return Ret(cudaErrorInvalidResourceHandle);
  uint64_t generation;
  {
    std::lock_guard<std::mutex> lock(g_event_mu);
    generation = event->state->recorded;
  }
  WaitEvent(*event->state, generation);
  return Ret(TakeAsyncError());
}
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (ms == nullptr) return Ret(cudaErrorInvalidValue);
  if (start == nullptr || end == nullptr) return Ret(cudaErrorInvalidResourceHandle);
  std::lock_guard<std::mutex> lock(g_event_mu);
  const EventState& a = *start->state;
  const EventState& b = *end->state;
  if (((a.flags | b.flags) & cudaEventDisableTiming) != 0 || a.recorded == 0 ||
      b.recorded == 0) {
    return Ret(cudaErrorInvalidResourceHandle);
  }
  if (a.done < a.recorded || b.done < b.recorded) return Ret(cudaErrorNotReady);
  *ms = static_cast<float>((static_cast<double>(b.time_ns) - static_cast<double>(a.time_ns)) *
                           1e-6);
  return cudaSuccess;
}
