// The SIMT layer's CPU runtime (docs/gpu.md "The SIMT layer"): runs a CUDA grid on the calling
// thread, one fiber per CUDA thread, blocks one after another. CUDA-free; kernels reach it through
// the shim in gpu/simt/simt.h, which maps threadIdx, __syncthreads, __shfl_sync... onto the
// functions below. Nothing here is thread-safe across host threads except that each host thread
// has its own current launch, order and last error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "base/status.h"

// CUDA's vector types. Where the toolkit's headers are found (SLUICE_SIMT_CUDA_HEADERS, set for
// the whole build by gpu/simt/meson.build, so every file agrees) they are CUDA's own, host paths
// only, so a kernel file can include cuda_bf16.h beside this; elsewhere, host-side spellings.
#if SLUICE_SIMT_CUDA_HEADERS
#include <vector_types.h>
#else
struct uint3 {
  unsigned x, y, z;
};
struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
};
#endif

namespace sluice::simt {

// In which order the threads that are ready run between two synchronisation points. A GPU gives
// no order at all; running them forward, backward and shuffled makes a missing barrier or a
// read of another thread's unsynchronised write change the result instead of passing by luck.
enum class OrderMode { kForward, kReverse, kRandom };
struct Order {
  OrderMode mode = OrderMode::kForward;  // how ready threads are ordered in each round
  uint64_t seed = 0;                     // kRandom: the shuffle's seed (same seed, same run)
};

// The order launches on this host thread use. The initial value comes from SLUICE_SIMT_ORDER
// ("forward", "reverse" or "random:SEED"; unset means forward); an unparsable value is the error
// of every launch from this thread, on a stream or not, until SetOrder replaces it.
void SetOrder(Order order);
Order CurrentOrder();

// The first error of the launches on this host thread since the last call (OK if none), and
// clears it, like cudaGetLastError. A launch that fails stops at the failing block; the message
// names the kernel, the block and the threads or lanes involved.
Status TakeLastError();

// A grid bound to its arguments, run later on another host thread; returns the launch's error.
using GridTask = std::function<Status()>;
// Where SLUICE_LAUNCH sends every launch, null stream included, once a device backend installed
// one: the CPU device backend (gpu/simt/cuda_runtime_host.cc) queues the task on the stream's
// worker thread, so kernels on different streams overlap and run in order with the stream's
// copies, and runs a null-stream grid on the caller after the work it must follow. `refused` is
// the launch's own error, found on the launching thread before anything runs (then `task` is
// empty): CUDA reports these at the launch, not at a synchronize, and they do not spoil the
// device. InvalidArgument: a grid or block outside CUDA's limits, or a malformed
// SLUICE_SIMT_ORDER (cudaErrorInvalidConfiguration); Unsupported: more dynamic shared memory
// than CUDA gives without cudaFuncSetAttribute, or a launch from inside a kernel
// (cudaErrorInvalidValue). Without a hook the grid runs on the caller before the launch returns
// and every error is kept for TakeLastError.
using StreamHook = void (*)(void* stream, const char* kernel, const Status& refused,
                            GridTask task);
void SetStreamHook(StreamHook hook);
StreamHook CurrentStreamHook();

// Dynamic shared memory per launch: CUDA's default limit. A kernel needs
// cudaFuncSetAttribute(cudaFuncAttributeMaxDynamicSharedMemorySize) for more on sm_80/sm_90; the
// layer does not model that attribute, so it refuses more (Unsupported), as CUDA refuses a launch
// that did not raise it.
inline constexpr size_t kMaxDynamicSharedBytes = 48 * 1024;

// Returns steady-clock nanoseconds: the CPU stand-in for %globaltimer.
uint64_t GlobalTimerNs();

// How many grids of each kernel this process has run, by SLUICE_LAUNCH's first argument as
// written (`ColumnPartialKernel<F>`), counted as each grid starts, on any host thread or stream:
// what tests check "every kernel ran at least once" against.
std::map<std::string, uint64_t> LaunchCounts();

namespace detail {

// What one CUDA thread sees; the shim reads it through Current().
struct ThreadView {
  uint3 thread_idx;
  uint3 block_idx;
  dim3 block_dim;
  dim3 grid_dim;
  unsigned char* dynamic_shared;  // the block's extern __shared__ bytes
};
// The running fiber's view; valid only inside a kernel launched through Launch.
const ThreadView& Current();

// A body that runs one CUDA thread; the caller keeps it alive during Run.
struct KernelBody {
  void (*call)(const void* self);
  const void* self;
};

// What CUDA checks at the launch call, on the launching thread: the configuration, the dynamic
// shared memory, this thread's SLUICE_SIMT_ORDER. OK or the refusal (see StreamHook).
Status CheckLaunch(const char* kernel, dim3 grid, dim3 block, size_t dynamic_shared_bytes);

// Checks the launch, then runs the grid; returns its error (also kept for TakeLastError).
Status Run(const char* kernel, dim3 grid, dim3 block, size_t dynamic_shared_bytes,
           KernelBody body);

// Block-wide barrier (__syncthreads).
void SyncThreads();
// The barrier of __syncthreads_count/_and/_or: returns how many threads of the block passed a
// true `predicate`. Every thread at one barrier must use this form (a GPU reduces only over
// bar.red arrivals; mixing it with __syncthreads there is reported as an error).
unsigned SyncThreadsCount(bool predicate);

// The warp collectives, all through one rendezvous: the calling lane waits until every lane of
// `mask` has reached a collective of the same kind and mask, then each gets its result.
enum class WarpOpKind { kSync, kShflIdx, kShflUp, kShflDown, kShflXor, kBallot };
struct WarpOp {
  WarpOpKind kind;
  unsigned mask;
  const void* value;  // the lane's `var` (shuffles)
  void* result;       // where the lane's shuffle result goes
  size_t size;        // sizeof(var)
  int arg;            // srcLane, delta or laneMask
  int width;          // shuffle segment width (a power of two up to 32)
  bool predicate;     // ballot/any/all
};
// Returns the ballot of the lanes in `mask` (kBallot), 0 otherwise.
unsigned WarpCollective(const WarpOp& op);

// The lanes of `mask` that took part in the calling thread's last warp collective: those that
// exist (a partial last warp has fewer) and had not exited (CUDA lets a mask name exited lanes).
// __all_sync compares its ballot with it.
unsigned PresentLanes(unsigned mask);

}  // namespace detail

// What SLUICE_LAUNCH expands to on the host: copies the arguments to the kernel's parameter types
// (as a launch does) and runs the grid, or hands it to the stream hook (a non-null stream).
template <typename... Params>
class Launcher {
 public:
  Launcher(const char* name, void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem,
           void* stream)
      : name_(name), kernel_(kernel), grid_(grid), block_(block), smem_(smem), stream_(stream) {}

  template <typename... Args>
  void operator()(Args&&... args) const {
    static_assert(sizeof...(Args) == sizeof...(Params), "kernel argument count");
    struct Bound {
      void (*kernel)(Params...);
      std::tuple<std::decay_t<Params>...> params;
      static void Call(const void* self) {
        const auto* b = static_cast<const Bound*>(self);
        std::apply(b->kernel, b->params);
      }
    };
    auto bound = std::make_shared<const Bound>(
        Bound{kernel_, {static_cast<std::decay_t<Params>>(std::forward<Args>(args))...}});
    const StreamHook hook = CurrentStreamHook();
    if (hook == nullptr) {
      (void)detail::Run(name_, grid_, block_, smem_, {&Bound::Call, bound.get()});
      return;
    }
    // Checked here, on the launching thread, as CUDA checks a launch: the worker would not see
    // this thread's SLUICE_SIMT_ORDER, and a refused grid must not be queued.
    const Status refused = detail::CheckLaunch(name_, grid_, block_, smem_);
    if (!refused.ok()) {
      hook(stream_, name_, refused, GridTask());
      return;
    }
    // The worker runs it in the launching thread's order mode (a later SetOrder does not apply).
    hook(stream_, name_, refused,
         [bound, name = name_, grid = grid_, block = block_, smem = smem_,
          order = CurrentOrder()] {
           SetOrder(order);
           (void)detail::Run(name, grid, block, smem, {&Bound::Call, bound.get()});
           return TakeLastError();
         });
  }

 private:
  const char* name_;
  void (*kernel_)(Params...);
  dim3 grid_, block_;
  size_t smem_;
  void* stream_;
};

template <typename... Params>
Launcher<Params...> MakeLauncher(const char* name, void (*kernel)(Params...), dim3 grid,
                                 dim3 block, size_t smem, void* stream) {
  return Launcher<Params...>(name, kernel, grid, block, smem, stream);
}

}  // namespace sluice::simt
