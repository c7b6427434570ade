#include "gpu/simt/cuda_runtime_host.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
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
#include <thread>
#include <utility>
#include <vector>

#include "gpu/simt/runtime.h"

namespace {

using sluice::simt::kDeviceCount;

uint64_t NowNs() { return sluice::simt::GlobalTimerNs(); }

// Queued work. A failed device drops what is queued on it, except work that must happen for no
// one to wait forever (event records).
struct Task {
  std::function<cudaError_t()> run;
  bool after_failure = false;
};

// Each device's sticky error: cudaSuccess until work on it fails, then that error for good.
std::atomic<cudaError_t> g_sticky[kDeviceCount];

thread_local int t_device = 0;
thread_local uint64_t t_host_waits = 0;  // sluice::simt::HostWaits()
thread_local cudaError_t t_last_error = cudaSuccess;
thread_local bool t_on_worker = false;  // this thread is a stream's worker

// CUDA forbids CUDA calls from work on a stream; one that queues or waits would deadlock here.
cudaError_t RefuseOnWorker() {
  if (!t_on_worker) return cudaSuccess;
  std::fprintf(stderr, "sluice: simt: a CUDA call from work running on a stream (a host "
                       "function or a kernel); CUDA does not permit it\n");
  return cudaErrorNotPermitted;
}

cudaError_t Sticky(int device) { return g_sticky[device].load(); }
void FailDevice(int device, cudaError_t e) {
  cudaError_t ok = cudaSuccess;
  g_sticky[device].compare_exchange_strong(ok, e);
}

// Every API call returns through here, so its error is also the thread's last error.
cudaError_t Ret(cudaError_t e) {
  if (e != cudaSuccess) t_last_error = e;
  return e;
}

// What an event's records have reached. Shared with the tasks that complete or wait for it, so
// destroying an event with work still queued is safe, as in CUDA.
struct EventState {
  unsigned flags = 0;
  int device = 0;
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
struct Allocation {
  size_t bytes;
  int device;
};
std::mutex g_mem_mu;
std::map<uintptr_t, Allocation> g_device;
std::map<uintptr_t, Allocation> g_pinned;
constexpr size_t kDeviceAlignment = 256;  // what cudaMalloc guarantees
constexpr size_t kPageAlignment = 4096;

// The allocation of `m` that [p, p + bytes) lies inside, or null (callers hold g_mem_mu).
const Allocation* Inside(const std::map<uintptr_t, Allocation>& m, const void* p, size_t bytes) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  auto it = m.upper_bound(a);
  if (it == m.begin()) return nullptr;
  --it;
  const size_t n = it->second.bytes;
  if (a - it->first < std::max<size_t>(n, 1) && a + bytes <= it->first + n) return &it->second;
  return nullptr;
}
bool IsDevice(const void* p, size_t bytes) {
  std::lock_guard<std::mutex> lock(g_mem_mu);
  return Inside(g_device, p, bytes) != nullptr;
}
bool IsPinned(const void* p, size_t bytes) {
  std::lock_guard<std::mutex> lock(g_mem_mu);
  return Inside(g_pinned, p, bytes) != nullptr;
}

// cudaMalloc and cudaHostAlloc: host memory, recorded in `m` (g_device or g_pinned).
cudaError_t Allocate(std::map<uintptr_t, Allocation>* m, size_t alignment, void** ptr,
                     size_t bytes) {
  if (ptr == nullptr) return Ret(cudaErrorInvalidValue);
  *ptr = nullptr;
  if (const cudaError_t e = Sticky(t_device)) return Ret(e);
  if (bytes == 0) return cudaSuccess;
  void* p = ::operator new(bytes, std::align_val_t(alignment), std::nothrow);
  if (p == nullptr) return Ret(cudaErrorMemoryAllocation);
  std::lock_guard<std::mutex> lock(g_mem_mu);
  m->emplace(reinterpret_cast<uintptr_t>(p), Allocation{bytes, t_device});
  *ptr = p;
  return cudaSuccess;
}

}  // namespace

// A stream: an in-order queue drained by its own worker thread. Owned through shared_ptr by the
// registry and by every call that uses it, so a cudaStreamDestroy on one thread cannot free it
// under a cudaStreamSynchronize on another.
struct CUstream_st {
  CUstream_st(int dev, bool nonblocking) : device(dev), blocking(!nonblocking) {}

  const int device;
  const bool blocking;  // synchronises with the legacy stream (not cudaStreamNonBlocking)
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Task> queue;
  uint64_t enqueued = 0;
  uint64_t completed = 0;
  bool stop = false;
  std::thread worker;

  void Work() {
    t_on_worker = true;
    std::unique_lock<std::mutex> lock(mu);
    while (true) {
      cv.wait(lock, [&] { return stop || !queue.empty(); });
      if (queue.empty()) return;
      Task task = std::move(queue.front());
      queue.pop_front();
      lock.unlock();
      if (task.after_failure || Sticky(device) == cudaSuccess) {
        const cudaError_t e = task.run();
        if (e != cudaSuccess) FailDevice(device, e);
      }
      task.run = nullptr;  // its captures go before the completion is seen
      lock.lock();
      ++completed;
      cv.notify_all();
    }
  }
  // False once the stream is being destroyed: the worker may be gone, the task would never run.
  bool Enqueue(Task task) {
    std::lock_guard<std::mutex> lock(mu);
    if (stop) return false;
    queue.push_back(std::move(task));
    ++enqueued;
    cv.notify_all();
    return true;
  }
  // Waits for the work enqueued before the call (not for work other threads add meanwhile).
  void Drain() {
    std::unique_lock<std::mutex> lock(mu);
    const uint64_t target = enqueued;
    cv.wait(lock, [&] { return completed >= target; });
  }
};

struct CUevent_st {
  std::shared_ptr<EventState> state = std::make_shared<EventState>();
};

namespace {

using StreamRef = std::shared_ptr<CUstream_st>;

std::mutex g_stream_mu;
std::map<cudaStream_t, StreamRef> g_streams;

// The live stream behind a handle; null for the null stream and for a handle that is not a live
// stream (*known tells them apart).
StreamRef Lookup(cudaStream_t s, bool* known) {
  *known = true;
  if (s == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(g_stream_mu);
  auto it = g_streams.find(s);
  if (it == g_streams.end()) {
    *known = false;
    return nullptr;
  }
  return it->second;
}

// Waits for the streams of `device`: every one, or only the blocking ones (what the legacy
// stream synchronises with).
void DrainDevice(int device, bool blocking_only) {
  std::vector<StreamRef> streams;
  {
    std::lock_guard<std::mutex> lock(g_stream_mu);
    for (const auto& [handle, s] : g_streams) {
      if (s->device == device && (s->blocking || !blocking_only)) streams.push_back(s);
    }
  }
  for (const StreamRef& s : streams) s->Drain();
}

// The device whose errors a call on `stream` reports: the stream's, or the current one.
int DeviceOf(const StreamRef& s) { return s != nullptr ? s->device : t_device; }

// Runs `task` in the stream's order: queued on a stream; on the null stream (the legacy stream),
// on the caller after the device's blocking streams. A failure spoils the device.
cudaError_t Submit(cudaStream_t stream, Task task) {
  if (const cudaError_t e = RefuseOnWorker()) return Ret(e);
  bool known = false;
  const StreamRef s = Lookup(stream, &known);
  if (!known) return Ret(cudaErrorInvalidResourceHandle);
  const int device = DeviceOf(s);
  if (const cudaError_t e = Sticky(device)) return Ret(e);
  if (s != nullptr) {
    return s->Enqueue(std::move(task)) ? cudaSuccess : Ret(cudaErrorInvalidResourceHandle);
  }
  DrainDevice(device, /*blocking_only=*/true);
  if (const cudaError_t e = Sticky(device)) return Ret(e);
  const cudaError_t e = task.run();
  if (e != cudaSuccess) FailDevice(device, e);
  return Ret(e);
}

// SLUICE_LAUNCH (sluice::simt::StreamHook), null stream included.
void LaunchGrid(void* stream, const char* kernel, const sluice::Status& refused,
                sluice::simt::GridTask grid) {
  if (!refused.ok()) {
    std::fprintf(stderr, "sluice: simt: %s\n", refused.ToString().c_str());
    Ret(refused.code() == sluice::Status::Code::kInvalidArgument ? cudaErrorInvalidConfiguration
                                                                 : cudaErrorInvalidValue);
    return;
  }
  bool known = false;
  (void)Lookup(static_cast<cudaStream_t>(stream), &known);
  if (!known) {
    // As CUDA reports a launch on a destroyed stream: at launch, through cudaGetLastError.
    std::fprintf(stderr, "sluice: simt: kernel %s launched on an unknown stream\n", kernel);
    Ret(cudaErrorInvalidResourceHandle);
    return;
  }
  (void)Submit(static_cast<cudaStream_t>(stream), Task{[grid = std::move(grid)] {
                 const sluice::Status st = grid();
                 if (st.ok()) return cudaSuccess;
                 std::fprintf(stderr, "sluice: simt: %s\n", st.ToString().c_str());
                 return cudaErrorLaunchFailure;
               }});
}

// Installed when the backend is linked in, before any launch: every launch then goes through it.
[[maybe_unused]] const bool g_hook_installed = [] {
  sluice::simt::SetStreamHook(&LaunchGrid);
  return true;
}();

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
    {cudaErrorNotPermitted, "cudaErrorNotPermitted", "operation not permitted"},
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
  const cudaError_t sticky = Sticky(t_device);
  return sticky != cudaSuccess ? sticky : e;
}
cudaError_t cudaPeekAtLastError() {
  const cudaError_t sticky = Sticky(t_device);
  return sticky != cudaSuccess ? sticky : t_last_error;
}

cudaError_t cudaGetDeviceCount(int* count) {
  if (count == nullptr) return Ret(cudaErrorInvalidValue);
  *count = kDeviceCount;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) {
  if (device < 0 || device >= kDeviceCount) return Ret(cudaErrorInvalidDevice);
  t_device = device;
  return cudaSuccess;
}
cudaError_t cudaGetDevice(int* device) {
  if (device == nullptr) return Ret(cudaErrorInvalidValue);
  *device = t_device;
  return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (prop == nullptr) return Ret(cudaErrorInvalidValue);
  if (device < 0 || device >= kDeviceCount) return Ret(cudaErrorInvalidDevice);
  *prop = cudaDeviceProp{};
  std::snprintf(prop->name, sizeof(prop->name), "sluice SIMT device %d (CPU)", device);
  prop->totalGlobalMem =
      static_cast<size_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<size_t>(sysconf(_SC_PAGESIZE));
  prop->major = 8;  // the oldest architecture the nvcc build targets (sm_80)
  prop->minor = 0;
  prop->multiProcessorCount = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize() {
  if (const cudaError_t e = RefuseOnWorker()) return Ret(e);
  ++t_host_waits;
  DrainDevice(t_device, /*blocking_only=*/false);
  return Ret(Sticky(t_device));
}

cudaError_t cudaMalloc(void** ptr, size_t bytes) {
  return Allocate(&g_device, kDeviceAlignment, ptr, bytes);
}
cudaError_t cudaFree(void* ptr) {
  if (const cudaError_t e = RefuseOnWorker()) return Ret(e);
  if (ptr == nullptr) return cudaSuccess;
  int device = 0;
  {
    std::lock_guard<std::mutex> lock(g_mem_mu);
    auto it = g_device.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == g_device.end()) return Ret(cudaErrorInvalidValue);
    device = it->second.device;
  }
  // CUDA's cudaFree synchronises: a kernel or copy still queued that uses the memory runs first.
  DrainDevice(device, /*blocking_only=*/false);
  {
    std::lock_guard<std::mutex> lock(g_mem_mu);
    if (g_device.erase(reinterpret_cast<uintptr_t>(ptr)) == 0) return Ret(cudaErrorInvalidValue);
  }
  ::operator delete(ptr, std::align_val_t(kDeviceAlignment));
  return Ret(Sticky(device));
}
cudaError_t cudaHostAlloc(void** ptr, size_t bytes, unsigned flags) {
  if (flags > 0x0f) return Ret(cudaErrorInvalidValue);
  return Allocate(&g_pinned, kPageAlignment, ptr, bytes);
}
cudaError_t cudaMallocHost(void** ptr, size_t bytes) {
  return cudaHostAlloc(ptr, bytes, cudaHostAllocDefault);
}
cudaError_t cudaFreeHost(void* ptr) {
  if (const cudaError_t e = RefuseOnWorker()) return Ret(e);
  if (ptr == nullptr) return cudaSuccess;
  {
    std::lock_guard<std::mutex> lock(g_mem_mu);
    if (g_pinned.count(reinterpret_cast<uintptr_t>(ptr)) == 0) return Ret(cudaErrorInvalidValue);
  }
  // Synchronises like cudaFree: an async copy still queued may read or write the buffer.
  DrainDevice(t_device, /*blocking_only=*/false);
  {
    std::lock_guard<std::mutex> lock(g_mem_mu);
    if (g_pinned.erase(reinterpret_cast<uintptr_t>(ptr)) == 0) return Ret(cudaErrorInvalidValue);
  }
  ::operator delete(ptr, std::align_val_t(kPageAlignment));
  return Ret(Sticky(t_device));
}
cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attributes, const void* ptr) {
  if (attributes == nullptr) return Ret(cudaErrorInvalidValue);
  void* p = const_cast<void*>(ptr);
  std::lock_guard<std::mutex> lock(g_mem_mu);
  if (const Allocation* a = Inside(g_device, ptr, 0)) {
    *attributes = {cudaMemoryTypeDevice, a->device, p, nullptr};
  } else if (const Allocation* h = Inside(g_pinned, ptr, 0)) {
    *attributes = {cudaMemoryTypeHost, h->device, p, p};
  } else {
    *attributes = {cudaMemoryTypeUnregistered, -2, nullptr, nullptr};
  }
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  ++t_host_waits;
  const cudaError_t e = CheckCopy(dst, src, bytes, kind);
  if (e != cudaSuccess) return Ret(e);
  // A blocking copy is legacy-stream work: after the device's blocking streams, before return.
  return Submit(nullptr, Task{[dst, src, bytes] {
                  if (bytes != 0) std::memmove(dst, src, bytes);
                  return cudaSuccess;
                }});
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream) {
  const cudaError_t e = CheckCopy(dst, src, bytes, kind);
  if (e != cudaSuccess) return Ret(e);
  bool known = false;
  const StreamRef s = Lookup(stream, &known);
  if (!known) return Ret(cudaErrorInvalidResourceHandle);
  if (const cudaError_t sticky = Sticky(DeviceOf(s))) return Ret(sticky);
  if (bytes == 0) return cudaSuccess;
  const bool pageable = (kind == cudaMemcpyHostToDevice && !IsPinned(src, bytes)) ||
                        (kind == cudaMemcpyDeviceToHost && !IsPinned(dst, bytes));
  if (pageable && s != nullptr) {
    if (const cudaError_t refused = RefuseOnWorker()) return Ret(refused);
    // Staged through the runtime, as CUDA does from pageable memory: the caller may reuse its
    // buffer once the call returns, so the copy happens now, after the stream's earlier work.
    s->Drain();
    if (const cudaError_t sticky = Sticky(s->device)) return Ret(sticky);
    std::memmove(dst, src, bytes);
    return cudaSuccess;
  }
  return Submit(stream, Task{[dst, src, bytes] {
                  std::memmove(dst, src, bytes);
                  return cudaSuccess;
                }});
}
cudaError_t cudaMemsetAsync(void* dst, int value, size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return cudaSuccess;
  if (!IsDevice(dst, bytes)) return Ret(cudaErrorInvalidValue);
  return Submit(stream, Task{[dst, value, bytes] {
                  std::memset(dst, value, bytes);
                  return cudaSuccess;
                }});
}
cudaError_t cudaMemset(void* dst, int value, size_t bytes) {
  return cudaMemsetAsync(dst, value, bytes, nullptr);  // the legacy stream runs it before return
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned flags) {
  if (stream == nullptr || flags > cudaStreamNonBlocking) return Ret(cudaErrorInvalidValue);
  if (const cudaError_t e = Sticky(t_device)) return Ret(e);
  auto s = std::make_shared<CUstream_st>(t_device, (flags & cudaStreamNonBlocking) != 0);
  CUstream_st* raw = s.get();
  raw->worker = std::thread([raw] { raw->Work(); });  // the registry outlives the worker
  std::lock_guard<std::mutex> lock(g_stream_mu);
  g_streams.emplace(raw, std::move(s));
  *stream = raw;
  return cudaSuccess;
}
cudaError_t cudaStreamCreate(cudaStream_t* stream) {
  return cudaStreamCreateWithFlags(stream, cudaStreamDefault);
}
cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  if (const cudaError_t e = RefuseOnWorker()) return Ret(e);
  StreamRef s;
  {
    std::lock_guard<std::mutex> lock(g_stream_mu);
    auto it = stream == nullptr ? g_streams.end() : g_streams.find(stream);
    if (it == g_streams.end()) return Ret(cudaErrorInvalidResourceHandle);
    s = std::move(it->second);
    g_streams.erase(it);
  }
  // CUDA lets queued work finish after the call; the worker does, then stops. Callers that still
  // hold the stream (a cudaStreamSynchronize on another thread) keep it alive until they return.
  {
    std::lock_guard<std::mutex> lock(s->mu);
    s->stop = true;
    s->cv.notify_all();
  }
  s->worker.join();
  return Ret(Sticky(s->device));
}
cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  if (const cudaError_t e = RefuseOnWorker()) return Ret(e);
  ++t_host_waits;
  bool known = false;
  const StreamRef s = Lookup(stream, &known);
  if (!known) return Ret(cudaErrorInvalidResourceHandle);
  if (s == nullptr) {
    DrainDevice(t_device, /*blocking_only=*/true);  // the legacy stream: its blocking peers
  } else {
    s->Drain();
  }
  return Ret(Sticky(DeviceOf(s)));
}
cudaError_t cudaStreamQuery(cudaStream_t stream) {
  bool known = false;
  const StreamRef s = Lookup(stream, &known);
  if (!known) return Ret(cudaErrorInvalidResourceHandle);
  if (const cudaError_t e = Sticky(DeviceOf(s))) return Ret(e);
  if (s == nullptr) return cudaSuccess;
  std::lock_guard<std::mutex> lock(s->mu);
  return s->completed == s->enqueued ? cudaSuccess : cudaErrorNotReady;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned flags) {
  if (event == nullptr || flags != 0) return Ret(cudaErrorInvalidValue);
  std::shared_ptr<EventState> state = event->state;
  uint64_t generation;
  {
    std::lock_guard<std::mutex> lock(g_event_mu);
    generation = state->recorded;  // the most recent record; none recorded: nothing to wait for
  }
  return Submit(stream, Task{[state, generation] {
                  WaitEvent(*state, generation);
                  return cudaSuccess;
                }});
}

cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* user_data) {
  if (fn == nullptr) return Ret(cudaErrorInvalidValue);
  return Submit(stream, Task{[fn, user_data] {
                  fn(user_data);
                  return cudaSuccess;
                }});
}

uint64_t sluice::simt::HostWaits() { return t_host_waits; }

cudaError_t sluice::simt::LaunchHostTask(cudaStream_t stream, std::function<Status()> task) {
  if (!task) return Ret(cudaErrorInvalidValue);
  return Submit(stream, Task{[task = std::move(task)] {
                  const Status st = task();
                  if (st.ok()) return cudaSuccess;
                  std::fprintf(stderr, "sluice: simt: %s\n", st.ToString().c_str());
                  return cudaErrorLaunchFailure;
                }});
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned flags) {
  if (event == nullptr || flags > 0x0f) return Ret(cudaErrorInvalidValue);
  if (const cudaError_t e = Sticky(t_device)) return Ret(e);
  *event = new CUevent_st();
  (*event)->state->flags = flags;
  (*event)->state->device = t_device;
  return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t* event) {
  return cudaEventCreateWithFlags(event, cudaEventDefault);
}
cudaError_t cudaEventDestroy(cudaEvent_t event) {
  if (event == nullptr) return Ret(cudaErrorInvalidResourceHandle);
  const int device = event->state->device;
  delete event;
  return Ret(Sticky(device));
}
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  if (event == nullptr) return Ret(cudaErrorInvalidResourceHandle);
  bool known = false;
  (void)Lookup(stream, &known);
  if (!known) return Ret(cudaErrorInvalidResourceHandle);
  std::shared_ptr<EventState> state = event->state;
  uint64_t generation;
  {
    std::lock_guard<std::mutex> lock(g_event_mu);
    generation = ++state->recorded;
  }
  Task record{[state, generation] {
                {
                  std::lock_guard<std::mutex> lock(g_event_mu);
                  state->done = std::max(state->done, generation);
                  state->time_ns = NowNs();
                }
                g_event_cv.notify_all();
                return cudaSuccess;
              },
              /*after_failure=*/true};
  const cudaError_t e = Submit(stream, record);
  // Not queued (a failed device): complete it now, so that nothing waits for it forever.
  if (e != cudaSuccess) (void)record.run();
  return e;
}
cudaError_t cudaEventQuery(cudaEvent_t event) {
  if (event == nullptr) return Ret(cudaErrorInvalidResourceHandle);
  if (const cudaError_t e = Sticky(event->state->device)) return Ret(e);
  std::lock_guard<std::mutex> lock(g_event_mu);
  // Not ready is an answer, not an error: it does not become the last error.
  return event->state->done >= event->state->recorded ? cudaSuccess : cudaErrorNotReady;
}
cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  if (const cudaError_t e = RefuseOnWorker()) return Ret(e);
  ++t_host_waits;
  if (event == nullptr) return Ret(cudaErrorInvalidResourceHandle);
  uint64_t generation;
  {
    std::lock_guard<std::mutex> lock(g_event_mu);
    generation = event->state->recorded;
  }
  WaitEvent(*event->state, generation);
  return Ret(Sticky(event->state->device));
}
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (ms == nullptr) return Ret(cudaErrorInvalidValue);
  if (start == nullptr || end == nullptr) return Ret(cudaErrorInvalidResourceHandle);
  if (const cudaError_t e = Sticky(start->state->device)) return Ret(e);
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
