// The scheduler behind gpu/simt/runtime.h. Each block runs in rounds: every ready thread (fiber)
// runs, in the chosen order, until it blocks at a barrier or a warp collective or returns; then
// the collectives whose lanes have all arrived complete, and when nothing else can move, a
// __syncthreads that every live thread has reached releases. Anything else is a kernel bug the
// GPU would hang on or answer with garbage, reported as the launch's error.
#include "gpu/simt/runtime.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <sys/mman.h>

#include <boost/context/fiber.hpp>
#include <boost/context/stack_context.hpp>

#if defined(__SANITIZE_ADDRESS__)
#define SLUICE_SIMT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SLUICE_SIMT_ASAN 1
#endif
#endif
#if defined(SLUICE_SIMT_ASAN)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#if defined(__SANITIZE_THREAD__)
#define SLUICE_SIMT_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SLUICE_SIMT_TSAN 1
#endif
#endif
#if defined(SLUICE_SIMT_TSAN)
#include <sanitizer/tsan_interface.h>
#endif

namespace sluice::simt {
namespace {

namespace bctx = boost::context;
using detail::WarpOp;
using detail::WarpOpKind;

// 64 KiB per CUDA thread: kernels keep their arrays in registers or shared memory, so their
// frames are small; 1024 threads of a block then need 64 MiB at most, touched lazily.
constexpr size_t kStackBytes = 64 * 1024;
constexpr unsigned kMaxBlockThreads = 1024;

// ASan must be told about every stack switch, or it reports the fiber's frames as overflows of
// the thread stack and unpoisons the wrong range when an exception unwinds.
void StartSwitch([[maybe_unused]] void** fake_stack, [[maybe_unused]] const void* bottom,
                 [[maybe_unused]] size_t size) {
#if defined(SLUICE_SIMT_ASAN)
  __sanitizer_start_switch_fiber(fake_stack, bottom, size);
#endif
}
void FinishSwitch([[maybe_unused]] void* fake_stack, [[maybe_unused]] const void** old_bottom,
                  [[maybe_unused]] size_t* old_size) {
#if defined(SLUICE_SIMT_ASAN)
  __sanitizer_finish_switch_fiber(fake_stack, old_bottom, old_size);
#endif
}

// ThreadSanitizer keeps a call stack and a clock per thread; it must be told which fiber runs,
// or every switch leaves the frames of the fiber left behind on the thread's shadow stack (its
// reports then show dozens of make_fcontext frames, build-tsan/). The switches synchronise: the
// fibers of a block run one at a time on one host thread, each after the other's hand-over.
void* TsanCurrentFiber() {
#if defined(SLUICE_SIMT_TSAN)
  return __tsan_get_current_fiber();
#else
  return nullptr;
#endif
}
// Fiber contexts are pooled per host thread like the stacks below: creating and destroying one per
// CUDA thread and block made the NCCL suite take 300 s instead of 3 (each is mapped memory).
// Reusing one only adds happens-before between threads that ran one after the other anyway.
#if defined(SLUICE_SIMT_TSAN)
struct TsanFiberPool {
  ~TsanFiberPool() {
    for (void* f : free) __tsan_destroy_fiber(f);
  }
  std::vector<void*> free;
};
thread_local TsanFiberPool t_tsan_fibers;
#endif
void* TsanGetFiber() {
#if defined(SLUICE_SIMT_TSAN)
  if (t_tsan_fibers.free.empty()) return __tsan_create_fiber(0);
  void* f = t_tsan_fibers.free.back();
  t_tsan_fibers.free.pop_back();
  return f;
#else
  return nullptr;
#endif
}
void TsanPutFiber([[maybe_unused]] void* fiber) {
#if defined(SLUICE_SIMT_TSAN)
  if (fiber != nullptr) t_tsan_fibers.free.push_back(fiber);
#endif
}
// Right before the stack switch to `fiber`.
void TsanSwitchTo([[maybe_unused]] void* fiber) {
#if defined(SLUICE_SIMT_TSAN)
  __tsan_switch_to_fiber(fiber, 0);
#endif
}

// Below every stack, an inaccessible guard: a thread that overflows its stack (deep recursion, a
// big local array) faults there instead of writing over the memory below, which would be another
// fiber's stack or the heap. Larger than a page so that a frame of up to this size cannot step
// over it; it costs address space only.
constexpr size_t kGuardBytes = 64 * 1024;

// Fiber stacks, reused across blocks and launches of this host thread.
class StackPool {
 public:
  ~StackPool() {
    for (void* p : free_) munmap(static_cast<char*>(p) - kGuardBytes, kGuardBytes + kStackBytes);
  }
  // The lowest address of a kStackBytes stack with the guard below it.
  void* Get() {
    if (free_.empty()) {
      void* m = mmap(nullptr, kGuardBytes + kStackBytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (m == MAP_FAILED || mprotect(m, kGuardBytes, PROT_NONE) != 0) throw std::bad_alloc();
      return static_cast<char*>(m) + kGuardBytes;
    }
    void* p = free_.back();
    free_.pop_back();
    return p;
  }
  void Put(void* p) {
#if defined(SLUICE_SIMT_ASAN)
    // A finished fiber leaves the redzones of frames that never returned (Boost's entry
    // trampoline) poisoned; the next fiber on this memory must start clean.
    ASAN_UNPOISON_MEMORY_REGION(p, kStackBytes);
#endif
    free_.push_back(p);
  }

 private:
  std::vector<void*> free_;
};
thread_local StackPool t_stacks;

struct Thread;

// Boost.Context's StackAllocator concept over the pool; records the bounds for ASan.
struct PooledStack {
  Thread* owner;
  bctx::stack_context allocate();
  void deallocate(bctx::stack_context& sc) {
    t_stacks.Put(static_cast<char*>(sc.sp) - sc.size);
  }
};

enum class Wait { kReady, kBarrier, kWarp, kDone };

struct Thread {
  detail::ThreadView view{};
  unsigned linear = 0;  // x + y*bx + z*bx*by
  Wait wait = Wait::kReady;
  WarpOp op{};
  unsigned ballot = 0;
  unsigned participants = 0;  // the lanes that took part in its last warp collective
  bool counting = false;      // waits at __syncthreads_count/_and/_or, not __syncthreads
  bool predicate = false;     // its predicate there
  unsigned count = 0;         // the barrier's result, once released
  bctx::fiber fiber;          // the thread, while suspended
  bctx::fiber sink;           // the scheduler, while the thread runs
  const void* stack_bottom = nullptr;
  size_t stack_size = 0;
  void* fake_stack = nullptr;
  void* tsan_fiber = nullptr;  // ThreadSanitizer's context of the fiber (null without TSan)
};

bctx::stack_context PooledStack::allocate() {
  char* base = static_cast<char*>(t_stacks.Get());
  owner->stack_bottom = base;
  owner->stack_size = kStackBytes;
  bctx::stack_context sc;
  sc.size = kStackBytes;
  sc.sp = base + kStackBytes;
  return sc;
}

struct Cancelled {};

struct Block {
  const char* kernel = nullptr;
  detail::KernelBody body{};
  uint3 index{};
  std::vector<Thread> threads;
  bool cancel = false;
  std::string error;  // the first error; stops the block
  const void* sched_bottom = nullptr;
  size_t sched_size = 0;
  void* sched_tsan_fiber = nullptr;  // ThreadSanitizer's context of the scheduler
};

thread_local Block* t_block = nullptr;
thread_local Thread* t_thread = nullptr;

struct OrderState {
  Order order;
  std::string parse_error;
};
OrderState& CurrentOrderState() {
  thread_local std::optional<OrderState> state;
  if (!state) {
    state.emplace();
    const char* env = std::getenv("SLUICE_SIMT_ORDER");
    const std::string v = env ? env : "";
    if (v.empty() || v == "forward") {
      state->order.mode = OrderMode::kForward;
    } else if (v == "reverse") {
      state->order.mode = OrderMode::kReverse;
    } else if (v.rfind("random:", 0) == 0 && v.size() > 7 &&
               v.find_first_not_of("0123456789", 7) == std::string::npos) {
      state->order = {OrderMode::kRandom, std::strtoull(v.c_str() + 7, nullptr, 10)};
    } else {
      state->parse_error = "SLUICE_SIMT_ORDER=" + v +
                           ": expected forward, reverse or random:SEED (decimal)";
    }
  }
  return *state;
}

thread_local Status t_last_error;

std::string Dim(uint3 v) {
  return "(" + std::to_string(v.x) + "," + std::to_string(v.y) + "," + std::to_string(v.z) + ")";
}
std::string Hex(unsigned mask) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%08x", mask);
  return buf;
}
// "0-31, 40, 48-63"
std::string Ranges(const std::vector<unsigned>& ids) {
  std::string out;
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += std::to_string(ids[i]);
    if (j > i) out += "-" + std::to_string(ids[j]);
    i = j + 1;
  }
  return out;
}

const char* OpName(WarpOpKind k) {
  switch (k) {
    case WarpOpKind::kSync: return "__syncwarp";
    case WarpOpKind::kShflIdx: return "__shfl_sync";
    case WarpOpKind::kShflUp: return "__shfl_up_sync";
    case WarpOpKind::kShflDown: return "__shfl_down_sync";
    case WarpOpKind::kShflXor: return "__shfl_xor_sync";
    case WarpOpKind::kBallot: return "__ballot_sync/__any_sync/__all_sync";
  }
  return "?";
}

void Fail(Block& b, const std::string& what) {
  if (b.error.empty()) b.error = "kernel " + std::string(b.kernel) + ", block " + Dim(b.index) +
                                 ": " + what;
}

// Runs from the fiber: hands control back to the scheduler until this thread may go on.
void Yield(Block& b, Thread& t) {
  StartSwitch(&t.fake_stack, b.sched_bottom, b.sched_size);
  TsanSwitchTo(b.sched_tsan_fiber);
  t.sink = std::move(t.sink).resume();
  FinishSwitch(t.fake_stack, &b.sched_bottom, &b.sched_size);
  if (b.cancel) throw Cancelled{};
}

void Resume(Thread& t) {
  t_thread = &t;
  void* fake = nullptr;
  StartSwitch(&fake, t.stack_bottom, t.stack_size);
  TsanSwitchTo(t.tsan_fiber);
  t.fiber = std::move(t.fiber).resume();
  FinishSwitch(fake, nullptr, nullptr);
  t_thread = nullptr;
}

void Start(Block& b, Thread& t) {
  t.tsan_fiber = TsanGetFiber();
  t.fiber = bctx::fiber(std::allocator_arg, PooledStack{&t}, [&b, &t](bctx::fiber&& sink) {
    FinishSwitch(nullptr, &b.sched_bottom, &b.sched_size);
    t.sink = std::move(sink);
    try {
      if (!b.cancel) b.body.call(b.body.self);  // a block that failed early starts no more
    } catch (const Cancelled&) {
    } catch (const std::exception& e) {
      Fail(b, "thread " + std::to_string(t.linear) + " threw: " + e.what());
    }
    t.wait = Wait::kDone;
    StartSwitch(nullptr, b.sched_bottom, b.sched_size);
    TsanSwitchTo(b.sched_tsan_fiber);
    return std::move(t.sink);
  });
}

// The lane whose `var` lane `m` receives; its own lane when the source is past its segment.
unsigned SourceLane(const WarpOp& op, unsigned m) {
  const unsigned w = static_cast<unsigned>(op.width);
  const unsigned seg = m & ~(w - 1);
  const unsigned arg = static_cast<unsigned>(op.arg);
  switch (op.kind) {
    case WarpOpKind::kShflIdx: return seg + (arg & (w - 1));
    case WarpOpKind::kShflUp: return m >= seg + arg ? m - arg : m;
    case WarpOpKind::kShflDown: return m + arg < seg + w ? m + arg : m;
    case WarpOpKind::kShflXor: return (m ^ arg) < seg + w ? m ^ arg : m;
    default: return m;
  }
}

// Completes every warp collective whose lanes have all arrived, in every warp or only in the one
// of thread `only` (when given); returns whether any did.
bool ResolveWarps(Block& b, std::optional<unsigned> only = std::nullopt) {
  bool progress = false;
  const unsigned n = static_cast<unsigned>(b.threads.size());
  const unsigned first = only ? *only / 32 * 32 : 0, end = only ? first + 1 : n;
  for (unsigned base = first; base < end && b.error.empty(); base += 32) {
    const unsigned lanes = std::min(32u, n - base);
    const unsigned present = lanes == 32 ? ~0u : (1u << lanes) - 1;
    auto where = [&](const WarpOp& op) {
      return std::string(OpName(op.kind)) + " in warp " + std::to_string(base / 32) +
             " with mask " + Hex(op.mask);
    };
    // First the definite error, before any group completes: a lane outside its own mask.
    for (unsigned l = 0; l < lanes; ++l) {
      const Thread& t = b.threads[base + l];
      if (t.wait == Wait::kWarp && !(t.op.mask >> l & 1)) {
        Fail(b, where(t.op) + " is called by lane " + std::to_string(l) +
                    ", which the mask leaves out");
        return false;
      }
    }
    // CUDA (sm_70 on) lets a mask name lanes that have exited: the collective goes on without
    // them. Only a named lane that is still running and does not arrive is an error.
    unsigned exited = 0;
    for (unsigned l = 0; l < lanes; ++l) {
      if (b.threads[base + l].wait == Wait::kDone) exited |= 1u << l;
    }
    for (unsigned l = 0; l < lanes; ++l) {
      Thread& t = b.threads[base + l];
      if (t.wait != Wait::kWarp) continue;
      const WarpOp& op = t.op;
      const unsigned eff = op.mask & present & ~exited;
      bool all_here = true;
      for (unsigned m = 0; m < lanes; ++m) {
        const Thread& o = b.threads[base + m];
        if ((eff >> m & 1) && !(o.wait == Wait::kWarp && o.op.kind == op.kind &&
                                o.op.mask == op.mask)) {
          all_here = false;
        }
      }
      if (!all_here) continue;
      const int w = op.width;
      if (op.kind != WarpOpKind::kSync && op.kind != WarpOpKind::kBallot &&
          (w < 1 || w > 32 || (w & (w - 1)) != 0)) {
        Fail(b, where(op) + ": width " + std::to_string(w) + " is not a power of two up to 32");
        return false;
      }
      unsigned ballot = 0;
      for (unsigned m = 0; m < lanes; ++m) {
        if ((eff >> m & 1) && b.threads[base + m].op.predicate) ballot |= 1u << m;
      }
      for (unsigned m = 0; m < lanes; ++m) {
        if (!(eff >> m & 1)) continue;
        Thread& lane = b.threads[base + m];
        lane.ballot = ballot;
        lane.participants = eff;
        lane.wait = Wait::kReady;
        if (op.kind == WarpOpKind::kSync || op.kind == WarpOpKind::kBallot) continue;
        const unsigned src = SourceLane(lane.op, m);
        if (src != m && !(eff >> src & 1)) {
          const bool gone = (op.mask & present & exited) >> src & 1;
          Fail(b, where(op) + ": lane " + std::to_string(m) + " reads lane " + std::to_string(src) +
                      (gone ? ", which has exited" : ", outside the mask") +
                      " (its value is undefined on a GPU)");
          return false;
        }
        if (lane.op.size != op.size) {
          Fail(b, where(op) + ": lanes shuffle values of different sizes");
          return false;
        }
      }
      // Copy after all checks, reading every source before any result is used.
      for (unsigned m = 0; m < lanes; ++m) {
        if (!(eff >> m & 1) || op.kind == WarpOpKind::kSync || op.kind == WarpOpKind::kBallot) {
          continue;
        }
        Thread& lane = b.threads[base + m];
        const unsigned src = SourceLane(lane.op, m);
        std::memcpy(lane.op.result, b.threads[base + src].op.value, op.size);
      }
      progress = true;
    }
  }
  return progress;
}

// Nothing can move and not every live thread is at __syncthreads: say why.
void DescribeStuck(Block& b) {
  const unsigned n = static_cast<unsigned>(b.threads.size());
  for (unsigned i = 0; i < n; ++i) {
    const Thread& t = b.threads[i];
    if (t.wait != Wait::kWarp) continue;
    const unsigned base = i / 32 * 32;
    for (unsigned m = 0; m < 32 && base + m < n; ++m) {
      const Thread& o = b.threads[base + m];
      if (!(t.op.mask >> m & 1) || o.wait == Wait::kDone) continue;  // exited lanes may be named
      std::string state;
      if (o.wait == Wait::kBarrier) {
        state = "which waits at __syncthreads";
      } else if (o.op.kind != t.op.kind || o.op.mask != t.op.mask) {
        state = "which waits at " + std::string(OpName(o.op.kind)) + " with mask " +
                Hex(o.op.mask);
      } else {
        continue;
      }
      Fail(b, std::string(OpName(t.op.kind)) + " in warp " + std::to_string(base / 32) +
                  " with mask " + Hex(t.op.mask) + " (lane " + std::to_string(i - base) +
                  ") names lane " + std::to_string(m) + ", " + state);
      return;
    }
  }
  Fail(b, "no thread can proceed (internal error of the SIMT layer)");
}

// Runs one block to completion or to its first error.
void RunBlock(Block& b, const Order& order, std::mt19937_64& rng) {
  b.sched_tsan_fiber = TsanCurrentFiber();
  for (Thread& t : b.threads) {
    t.wait = Wait::kReady;
    Start(b, t);
  }
  std::deque<unsigned> ready;
  std::vector<unsigned> released;
  while (b.error.empty()) {
    ready.clear();
    for (unsigned i = 0; i < b.threads.size(); ++i) {
      if (b.threads[i].wait == Wait::kReady) ready.push_back(i);
    }
    if (order.mode == OrderMode::kReverse) std::reverse(ready.begin(), ready.end());
    if (order.mode == OrderMode::kRandom) std::shuffle(ready.begin(), ready.end(), rng);
    while (!ready.empty() && b.error.empty()) {
      const unsigned i = ready.front();
      ready.pop_front();
      Resume(b.threads[i]);
      // A warp whose collective completes goes on at once, ahead of the threads still queued,
      // as a GPU's warps run independently of each other: a warp that reuses shared memory
      // after a shuffle, without the __syncthreads that keeps it from overwriting what other
      // warps have yet to read, then does overwrite it (in the order that runs it first).
      if (b.threads[i].wait != Wait::kWarp) continue;
      const unsigned base = i / 32 * 32;
      const unsigned lanes = std::min<unsigned>(32, b.threads.size() - base);
      const unsigned present = lanes == 32 ? ~0u : (1u << lanes) - 1;
      unsigned arrived = 0;  // at a collective or returned
      for (unsigned l = 0; l < lanes; ++l) {
        const Wait w = b.threads[base + l].wait;
        arrived |= unsigned{w == Wait::kWarp || w == Wait::kDone} << l;
      }
      // Only once the whole warp is there (cheap test first: most arrivals are not the last),
      // so a lane calling outside its mask is still reported before any group completes.
      if (arrived != present || !ResolveWarps(b, i)) continue;
      released.clear();
      for (unsigned l = 0; l < lanes; ++l) {
        if ((arrived >> l & 1) && b.threads[base + l].wait == Wait::kReady) {
          released.push_back(base + l);
        }
      }
      if (order.mode == OrderMode::kReverse) std::reverse(released.begin(), released.end());
      if (order.mode == OrderMode::kRandom) std::shuffle(released.begin(), released.end(), rng);
      ready.insert(ready.begin(), released.begin(), released.end());
    }
    if (!b.error.empty() || ResolveWarps(b)) continue;
    std::vector<unsigned> waiting, returned;
    bool stuck = false;
    for (const Thread& t : b.threads) {
      if (t.wait == Wait::kBarrier) waiting.push_back(t.linear);
      if (t.wait == Wait::kDone) returned.push_back(t.linear);
      if (t.wait == Wait::kWarp) stuck = true;
    }
    if (stuck) {
      DescribeStuck(b);
    } else if (waiting.empty()) {
      break;  // every thread returned
    } else if (!returned.empty()) {
      Fail(b, "__syncthreads reached by threads " + Ranges(waiting) + " but threads " +
                  Ranges(returned) + " returned without it (a divergent barrier)");
    } else {
      unsigned counting = 0, count = 0;
      for (const Thread& t : b.threads) {
        counting += t.counting;
        count += t.counting && t.predicate;
      }
      if (counting != 0 && counting != b.threads.size()) {
        Fail(b, "one barrier reached by " + std::to_string(counting) +
                    " threads at __syncthreads_count/_and/_or and the others at __syncthreads");
        break;
      }
      for (Thread& t : b.threads) {
        t.wait = Wait::kReady;
        t.count = count;
      }
    }
  }
  // Unwind the threads still suspended: each throws Cancelled out of its Yield.
  b.cancel = true;
  for (Thread& t : b.threads) {
    if (t.wait != Wait::kDone) Resume(t);
  }
  b.cancel = false;
  for (Thread& t : b.threads) {
    TsanPutFiber(t.tsan_fiber);
    t.tsan_fiber = nullptr;
  }
}

}  // namespace

void SetOrder(Order order) {
  OrderState& s = CurrentOrderState();
  s.order = order;
  s.parse_error.clear();
}

Order CurrentOrder() { return CurrentOrderState().order; }

namespace {
std::atomic<StreamHook> g_stream_hook{nullptr};

std::mutex g_launch_counts_mu;
std::map<std::string, uint64_t> g_launch_counts;  // guarded by g_launch_counts_mu
}  // namespace

void SetStreamHook(StreamHook hook) { g_stream_hook.store(hook); }
StreamHook CurrentStreamHook() { return g_stream_hook.load(); }

std::map<std::string, uint64_t> LaunchCounts() {
  std::lock_guard<std::mutex> lock(g_launch_counts_mu);
  return g_launch_counts;
}

Status TakeLastError() { return std::exchange(t_last_error, Status::OK()); }

uint64_t GlobalTimerNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

namespace detail {

const ThreadView& Current() { return t_thread->view; }

Status CheckLaunch(const char* kernel, dim3 grid, dim3 block, size_t dynamic_shared_bytes) {
  const std::string name = kernel;
  if (t_block != nullptr) {
    return Status::Unsupported("kernel " + name + ": launched from inside kernel " +
                               t_block->kernel + " (dynamic parallelism)");
  }
  const OrderState& order = CurrentOrderState();
  if (!order.parse_error.empty()) {
    return Status::InvalidArgument("kernel " + name + ": " + order.parse_error);
  }
  const uint64_t threads = uint64_t{block.x} * block.y * block.z;
  if (threads == 0 || threads > kMaxBlockThreads || block.z > 64) {
    return Status::InvalidArgument(
        "kernel " + name + ": block " + Dim({block.x, block.y, block.z}) + " has " +
        std::to_string(threads) + " threads; CUDA allows 1 to 1024 (z at most 64)");
  }
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.y > 65535 || grid.z > 65535) {
    return Status::InvalidArgument("kernel " + name + ": grid " + Dim({grid.x, grid.y, grid.z}) +
                                   " is empty or too big");
  }
  if (dynamic_shared_bytes > kMaxDynamicSharedBytes) {
    return Status::Unsupported(
        "kernel " + name + ": " + std::to_string(dynamic_shared_bytes) +
        " bytes of dynamic shared memory; CUDA allows " +
        std::to_string(kMaxDynamicSharedBytes) +
        " (48 KiB) unless cudaFuncSetAttribute raised the kernel's limit, which the SIMT layer "
        "does not model");
  }
  return Status::OK();
}

Status Run(const char* kernel, dim3 grid, dim3 block, size_t dynamic_shared_bytes,
           KernelBody body) {
  auto fail = [&](Status s) {
    if (t_last_error.ok()) t_last_error = s;
    return s;
  };
  const Status refused = CheckLaunch(kernel, grid, block, dynamic_shared_bytes);
  if (!refused.ok()) return fail(refused);
  const OrderState& order = CurrentOrderState();
  const uint64_t threads = uint64_t{block.x} * block.y * block.z;
  {
    std::lock_guard<std::mutex> lock(g_launch_counts_mu);
    ++g_launch_counts[kernel];
  }
  std::unique_ptr<unsigned char[]> shared(new unsigned char[std::max<size_t>(
      dynamic_shared_bytes, 1)]);
  Block b;
  b.kernel = kernel;
  b.body = body;
  b.threads.resize(threads);
  std::mt19937_64 rng(order.order.seed);
  t_block = &b;
  for (unsigned bz = 0; bz < grid.z && b.error.empty(); ++bz) {
    for (unsigned by = 0; by < grid.y && b.error.empty(); ++by) {
      for (unsigned bx = 0; bx < grid.x && b.error.empty(); ++bx) {
        b.index = {bx, by, bz};
        unsigned i = 0;
        for (unsigned z = 0; z < block.z; ++z) {
          for (unsigned y = 0; y < block.y; ++y) {
            for (unsigned x = 0; x < block.x; ++x, ++i) {
              Thread& t = b.threads[i];
              t.linear = i;
              t.participants = ~0u;  // PresentLanes masks it with the lanes that exist
              t.view = {{x, y, z}, b.index, block, grid, shared.get()};
            }
          }
        }
        RunBlock(b, order.order, rng);
      }
    }
  }
  t_block = nullptr;
  if (!b.error.empty()) return fail(Status::InvalidArgument(b.error));
  return Status::OK();
}

void SyncThreads() {
  t_thread->wait = Wait::kBarrier;
  t_thread->counting = false;
  Yield(*t_block, *t_thread);
}

unsigned SyncThreadsCount(bool predicate) {
  Thread& t = *t_thread;
  t.wait = Wait::kBarrier;
  t.counting = true;
  t.predicate = predicate;
  Yield(*t_block, t);
  return t.count;
}

unsigned WarpCollective(const WarpOp& op) {
  Thread& t = *t_thread;
  t.op = op;
  t.wait = Wait::kWarp;
  Yield(*t_block, t);
  return op.kind == WarpOpKind::kBallot ? t.ballot : 0;
}

unsigned PresentLanes(unsigned mask) {
  const Thread& t = *t_thread;
  const unsigned n = static_cast<unsigned>(t_block->threads.size());
  const unsigned base = t.linear / 32 * 32;
  const unsigned lanes = std::min(32u, n - base);
  return mask & t.participants & (lanes == 32 ? ~0u : (1u << lanes) - 1);
}

}  // namespace detail
}  // namespace sluice::simt
