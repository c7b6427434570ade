// The in-process NCCL behind gpu/simt/nccl_host.h. Ranks of one communicator share a Clique; the
// n-th collective of every rank is one Op, completed by the last rank's stream worker to reach it
// (it reduces into the Op's own buffer, in rank order, while every rank's worker is held there),
// after which each worker copies the result into its recvbuff. Anything that keeps an Op from
// completing breaks the whole Clique, so no rank waits for it past the failure.
#include "gpu/simt/nccl_host.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

using sluice::Status;
using Clock = std::chrono::steady_clock;

constexpr double kDefaultTimeoutSeconds = 120;
constexpr char kIdPrefix[] = "sluice-simt-nccl ";

thread_local std::string t_last_error;

ncclResult_t Fail(ncclResult_t r, std::string msg) {
  t_last_error = std::move(msg);
  return r;
}

size_t TypeSize(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
    case ncclUint8: return 1;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32: return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64: return 8;
    default: return 0;  // half, bf16 and anything else: not supported here
  }
}
const char* TypeName(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: return "ncclInt8";
    case ncclUint8: return "ncclUint8";
    case ncclInt32: return "ncclInt32";
    case ncclUint32: return "ncclUint32";
    case ncclInt64: return "ncclInt64";
    case ncclUint64: return "ncclUint64";
    case ncclFloat16: return "ncclFloat16";
    case ncclFloat32: return "ncclFloat32";
    case ncclFloat64: return "ncclFloat64";
    case ncclBfloat16: return "ncclBfloat16";
  }
  return "ncclDataType_t(?)";
}
const char* OpName(ncclRedOp_t op) {
  switch (op) {
    case ncclSum: return "ncclSum";
    case ncclProd: return "ncclProd";
    case ncclMax: return "ncclMax";
    case ncclMin: return "ncclMin";
    case ncclAvg: return "ncclAvg";
  }
  return "ncclRedOp_t(?)";
}

// A collective as one rank called it; the n-th calls of all ranks must agree.
struct Call {
  bool broadcast = false;
  size_t count = 0;
  ncclDataType_t type = ncclFloat32;
  ncclRedOp_t op = ncclSum;  // all-reduce
  int root = 0;              // broadcast

  bool operator==(const Call& o) const {
    return broadcast == o.broadcast && count == o.count && type == o.type &&
           (broadcast ? root == o.root : op == o.op);
  }
  std::string Describe() const {
    return std::string(broadcast ? "ncclBroadcast" : "ncclAllReduce") + "(count " +
           std::to_string(count) + ", " + TypeName(type) + ", " +
           (broadcast ? "root " + std::to_string(root) : std::string(OpName(op))) + ")";
  }
};

// The type sums and products are computed in: integers in their unsigned twin, so that one that
// overflows wraps as on a GPU instead of being undefined.
template <typename T, bool = std::is_integral_v<T>>
struct Arith {
  using type = T;
};
template <typename T>
struct Arith<T, true> {
  using type = std::make_unsigned_t<T>;
};

template <typename T>
T Apply(ncclRedOp_t op, T a, T b) {
  using U = typename Arith<T>::type;
  switch (op) {
    case ncclSum:
    case ncclAvg: return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
    case ncclProd: return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
    case ncclMax: return b > a ? b : a;
    case ncclMin: return b < a ? b : a;
  }
  return a;
}

// out[i] = send[0][i] op send[1][i] op ... in rank order; ncclAvg divides the sum by n.
template <typename T>
void Reduce(const std::vector<const void*>& send, void* out, size_t count, ncclRedOp_t op) {
  T* o = static_cast<T*>(out);
  std::memcpy(o, send[0], count * sizeof(T));
  for (size_t r = 1; r < send.size(); ++r) {
    const T* s = static_cast<const T*>(send[r]);
    for (size_t i = 0; i < count; ++i) o[i] = Apply(op, o[i], s[i]);
  }
  if (op == ncclAvg) {
    const T n = static_cast<T>(send.size());
    for (size_t i = 0; i < count; ++i) o[i] = static_cast<T>(o[i] / n);
  }
}

void ReduceAny(const Call& c, const std::vector<const void*>& send, void* out) {
  switch (c.type) {
    case ncclInt8: return Reduce<int8_t>(send, out, c.count, c.op);
    case ncclUint8: return Reduce<uint8_t>(send, out, c.count, c.op);
    case ncclInt32: return Reduce<int32_t>(send, out, c.count, c.op);
    case ncclUint32: return Reduce<uint32_t>(send, out, c.count, c.op);
    case ncclInt64: return Reduce<int64_t>(send, out, c.count, c.op);
    case ncclUint64: return Reduce<uint64_t>(send, out, c.count, c.op);
    case ncclFloat32: return Reduce<float>(send, out, c.count, c.op);
    case ncclFloat64: return Reduce<double>(send, out, c.count, c.op);
    default: return;  // refused when the call was made
  }
}

struct Clique;

// One collective across the ranks.
struct Op {
  Call call;
  int first_rank = 0;
  std::vector<bool> here;
  std::vector<const void*> send;
  int arrived = 0;
  std::vector<unsigned char> result;
  bool ready = false;
  int copied = 0;
};

// One ncclCommSplit across the ranks of the parent.
struct Split {
  std::vector<std::optional<std::pair<int, int>>> color_key;
  int arrived = 0;
  bool ready = false;
  std::vector<std::pair<std::shared_ptr<Clique>, int>> assignment;  // per parent rank
  int taken = 0;
};

// The ranks of one communicator.
struct Clique {
  Clique(int n, std::string label, double timeout)
      : nranks(n),
        name(std::move(label)),
        timeout_s(timeout),
        closed_ops(n, -1),
        closed_splits(n, -1) {}

  const int nranks;
  const std::string name;
  const double timeout_s;
  std::mutex mu;
  std::condition_variable cv;
  std::map<uint64_t, Op> ops;
  std::map<uint64_t, Split> splits;
  // Per rank: -1 while its communicator lives, else how many collectives (splits) it had issued
  // when it was destroyed or aborted; it will never arrive at a later one.
  std::vector<int64_t> closed_ops;
  std::vector<int64_t> closed_splits;
  std::string broken;  // why nothing more can complete (an abort, a failed collective)
  ncclResult_t broken_code = ncclSuccess;

  // Breaks the clique (the first reason stays) and wakes every waiting rank (callers hold mu).
  void Break(ncclResult_t code, const std::string& why) {
    if (broken.empty()) {
      broken = why;
      broken_code = code;
    }
    cv.notify_all();
  }
};

// One rank's side of a communicator; shared with its queued collectives.
struct RankState {
  RankState(std::shared_ptr<Clique> c, int r, int d) : clique(std::move(c)), rank(r), device(d) {}

  const std::shared_ptr<Clique> clique;
  const int rank;
  const int device;
  uint64_t issued = 0;  // collectives enqueued (the calling thread only, as NCCL requires)
  uint64_t splits = 0;
  bool aborted = false;  // under clique->mu: its queued collectives are cancelled

  std::mutex mu;
  ncclResult_t async_error = ncclSuccess;
  std::string async_message;

  std::string Where() const {
    return "communicator " + clique->name + ", rank " + std::to_string(rank) + " of " +
           std::to_string(clique->nranks);
  }
  void SetAsyncError(ncclResult_t code, const std::string& message) {
    std::lock_guard<std::mutex> lock(mu);
    if (async_error != ncclSuccess) return;
    async_error = code;
    async_message = message;
  }
  // The async error, as the result of a later call (and this thread's last error).
  ncclResult_t CheckAsync() {
    std::lock_guard<std::mutex> lock(mu);
    if (async_error == ncclSuccess) return ncclSuccess;
    return Fail(async_error, async_message);
  }
};

double TimeoutFromEnv() {
  const char* v = std::getenv("SLUICE_SIMT_NCCL_TIMEOUT");
  if (v == nullptr || *v == '\0') return kDefaultTimeoutSeconds;
  char* end = nullptr;
  const double s = std::strtod(v, &end);
  if (end == v || *end != '\0' || !(s > 0)) {
    std::fprintf(stderr,
                 "sluice: simt: SLUICE_SIMT_NCCL_TIMEOUT=%s is not a positive number of "
                 "seconds; using %.0f\n",
                 v, kDefaultTimeoutSeconds);
    return kDefaultTimeoutSeconds;
  }
  return s;
}

std::string Ranks(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return out;
}

// Waits (holding `lock` on c.mu) until done() or the clique breaks; breaks it itself when a rank
// it waits for has closed (closed[k] <= seq and !here(k)) or the timeout passes. OK once done().
Status WaitForRanks(Clique& c, std::unique_lock<std::mutex>& lock, const std::string& what,
                    uint64_t seq, const std::vector<int64_t>& closed,
                    const std::function<bool(int)>& here, const std::function<bool()>& done) {
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(c.timeout_s));
  while (!done() && c.broken.empty()) {
    std::vector<int> missing;
    for (int k = 0; k < c.nranks; ++k) {
      if (here(k)) continue;
      missing.push_back(k);
      if (closed[k] >= 0 && static_cast<uint64_t>(closed[k]) <= seq) {
        c.Break(ncclRemoteError, "rank " + std::to_string(k) +
                                     " destroyed its communicator after " +
                                     std::to_string(closed[k]) + " " + what + "s, before this one");
      }
    }
    if (!c.broken.empty()) break;
    if (c.cv.wait_until(lock, deadline) == std::cv_status::timeout && !done() && c.broken.empty()) {
      char secs[32];
      std::snprintf(secs, sizeof(secs), "%g", c.timeout_s);
      c.Break(ncclSystemError,
              "rank(s) " + Ranks(missing) + " did not reach it within " + secs +
                  " s (SLUICE_SIMT_NCCL_TIMEOUT): a rank stopped, or ranks issue different "
                  "collectives");
    }
  }
  if (done()) return Status::OK();
  return Status::IOError(c.broken);
}

// The collective `seq` of rank `rs`, on its stream's worker: arrive, wait for the others,
// take the result. An error breaks the clique and is the rank's async error.
Status RunCollective(const std::shared_ptr<RankState>& rs, uint64_t seq, const Call& call,
                     const void* send, void* recv) {
  Clique& c = *rs->clique;
  const std::string where = call.Describe() + " #" + std::to_string(seq) + " on " + rs->Where();
  std::unique_lock<std::mutex> lock(c.mu);
  if (rs->aborted) return Status::OK();  // cancelled by this rank's ncclCommAbort
  auto failed = [&](const std::string& why) {
    const std::string msg = where + ": " + why;
    rs->SetAsyncError(c.broken_code, msg);
    return Status::IOError(msg);
  };
  if (!c.broken.empty()) return failed(c.broken);
  Op& op = c.ops[seq];
  if (op.arrived == 0) {
    op.call = call;
    op.first_rank = rs->rank;
    op.here.assign(c.nranks, false);
    op.send.assign(c.nranks, nullptr);
  } else if (!(op.call == call)) {
    c.Break(ncclInvalidUsage, "rank " + std::to_string(rs->rank) + " called " + call.Describe() +
                                  " where rank " + std::to_string(op.first_rank) + " called " +
                                  op.call.Describe());
    return failed(c.broken);
  }
  op.here[rs->rank] = true;
  op.send[rs->rank] = send;
  if (++op.arrived == c.nranks) {
    // Every rank's worker is held here: their buffers are stable while this reads them.
    const size_t bytes = call.count * TypeSize(call.type);
    op.result.resize(bytes);
    if (call.broadcast) {
      if (bytes != 0) std::memcpy(op.result.data(), op.send[call.root], bytes);
    } else if (bytes != 0) {
      ReduceAny(call, op.send, op.result.data());
    }
    op.ready = true;
    c.cv.notify_all();
  } else {
    const Status st = WaitForRanks(
        c, lock, "collective", seq, c.closed_ops, [&](int k) { return op.here[k]; },
        [&] { return op.ready; });
    if (rs->aborted) return Status::OK();
    if (!st.ok()) return failed(c.broken);
  }
  // Out of the lock: the Op stays until every rank has copied.
  lock.unlock();
  if (!op.result.empty()) std::memcpy(recv, op.result.data(), op.result.size());
  lock.lock();
  if (++op.copied == c.nranks) c.ops.erase(seq);
  return Status::OK();
}

// sendbuff/recvbuff: device memory of `bytes` (null and zero bytes pass).
bool IsDeviceRange(const void* p, size_t bytes) {
  if (bytes == 0) return true;
  cudaPointerAttributes a{}, b{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess || a.type != cudaMemoryTypeDevice) {
    return false;
  }
  const void* last = static_cast<const char*>(p) + bytes - 1;
  return cudaPointerGetAttributes(&b, last) == cudaSuccess && b.type == cudaMemoryTypeDevice;
}

ncclResult_t Enqueue(const char* fn, ncclComm_t comm, const Call& call, const void* send,
                     void* recv, bool check_send, cudaStream_t stream);

// Rendezvous of ncclCommInitRank, by id.
struct Pending {
  int nranks = 0;
  std::vector<bool> joined;
  int count = 0;
  std::shared_ptr<Clique> clique;
};
std::mutex g_init_mu;
std::condition_variable g_init_cv;
std::map<std::string, std::shared_ptr<Pending>> g_pending;
std::atomic<uint64_t> g_next_id{0};

}  // namespace

struct ncclComm {
  std::shared_ptr<RankState> state;
};

namespace {

ncclResult_t Enqueue(const char* fn, ncclComm_t comm, const Call& call, const void* send,
                     void* recv, bool check_send, cudaStream_t stream) {
  if (comm == nullptr) return Fail(ncclInvalidArgument, std::string(fn) + ": comm is null");
  const std::shared_ptr<RankState> rs = comm->state;
  if (const ncclResult_t e = rs->CheckAsync()) return e;
  const std::string what = std::string(fn) + " on " + rs->Where() + ": ";
  const size_t size = TypeSize(call.type);
  if (size == 0) {
    return Fail(ncclInvalidArgument,
                what + TypeName(call.type) + " is not supported by the SIMT layer's NCCL");
  }
  if (!call.broadcast && (call.op < ncclSum || call.op > ncclAvg)) {
    return Fail(ncclInvalidArgument, what + "unknown reduction " + std::to_string(call.op));
  }
  if (call.broadcast && (call.root < 0 || call.root >= rs->clique->nranks)) {
    return Fail(ncclInvalidArgument, what + "root " + std::to_string(call.root) + " outside [0, " +
                                         std::to_string(rs->clique->nranks) + ")");
  }
  const size_t bytes = call.count * size;
  if (check_send && !IsDeviceRange(send, bytes)) {
    return Fail(ncclInvalidArgument,
                what + "sendbuff is not " + std::to_string(bytes) + " bytes of device memory");
  }
  if (!IsDeviceRange(recv, bytes)) {
    return Fail(ncclInvalidArgument,
                what + "recvbuff is not " + std::to_string(bytes) + " bytes of device memory");
  }
  const uint64_t seq = rs->issued;
  const cudaError_t e = sluice::simt::LaunchHostTask(
      stream, [rs, seq, call, send, recv] { return RunCollective(rs, seq, call, send, recv); });
  if (e != cudaSuccess) {
    return Fail(ncclUnhandledCudaError, what + "queueing on the stream: " + cudaGetErrorString(e) +
                                            " (" + cudaGetErrorName(e) + ")");
  }
  ++rs->issued;
  return ncclSuccess;
}

// Closes rank `rs` of its clique: it will issue nothing more.
void Close(RankState& rs, bool abort) {
  Clique& c = *rs.clique;
  std::lock_guard<std::mutex> lock(c.mu);
  c.closed_ops[rs.rank] = static_cast<int64_t>(rs.issued);
  c.closed_splits[rs.rank] = static_cast<int64_t>(rs.splits);
  if (abort) {
    rs.aborted = true;
    c.Break(ncclRemoteError, "rank " + std::to_string(rs.rank) + " called ncclCommAbort");
  }
  c.cv.notify_all();
}

}  // namespace

const char* ncclGetErrorString(ncclResult_t result) {
  // NCCL's wording, with the pointer to ncclGetLastError in place of NCCL_DEBUG.
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (see ncclGetLastError)";
    case ncclSystemError: return "unhandled system error (see ncclGetLastError)";
    case ncclInternalError: return "internal error";
    case ncclInvalidArgument: return "invalid argument (see ncclGetLastError)";
    case ncclInvalidUsage: return "invalid usage (see ncclGetLastError)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

const char* ncclGetLastError(ncclComm_t comm) {
  if (comm != nullptr) {
    RankState& rs = *comm->state;
    std::lock_guard<std::mutex> lock(rs.mu);
    if (rs.async_error != ncclSuccess) {
      t_last_error = rs.async_message;  // a copy this thread owns; the comm may change
    }
  }
  return t_last_error.c_str();
}

ncclResult_t ncclGetVersion(int* version) {
  if (version == nullptr) return Fail(ncclInvalidArgument, "ncclGetVersion: version is null");
  *version = 22800;  // the NCCL whose semantics are modelled (2.28)
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* unique_id) {
  if (unique_id == nullptr) return Fail(ncclInvalidArgument, "ncclGetUniqueId: id is null");
  std::string label;
  if (const char* addr = std::getenv("NCCL_COMM_ID"); addr != nullptr && *addr != '\0') {
    label = std::string("NCCL_COMM_ID=") + addr;
  } else {
    std::random_device rd;
    label = "id " + std::to_string(g_next_id.fetch_add(1)) + " of pid " + std::to_string(getpid()) +
            " (" + std::to_string(rd()) + ")";
  }
  std::string id = kIdPrefix + label;
  if (id.size() >= NCCL_UNIQUE_ID_BYTES) {
    // Keep it unique: a shortened label plus a hash of the whole.
    char hash[24];
    std::snprintf(hash, sizeof(hash), "#%016zx", std::hash<std::string>()(id));
    id = id.substr(0, NCCL_UNIQUE_ID_BYTES - 1 - std::strlen(hash)) + hash;
  }
  std::memset(unique_id->internal, 0, sizeof(unique_id->internal));
  std::memcpy(unique_id->internal, id.data(), id.size());
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId comm_id, int rank) {
  if (comm == nullptr) return Fail(ncclInvalidArgument, "ncclCommInitRank: comm is null");
  *comm = nullptr;
  if (nranks < 1 || rank < 0 || rank >= nranks) {
    return Fail(ncclInvalidArgument,
                "ncclCommInitRank: rank " + std::to_string(rank) + " of " + std::to_string(nranks));
  }
  const std::string key(comm_id.internal, strnlen(comm_id.internal, NCCL_UNIQUE_ID_BYTES));
  if (key.rfind(kIdPrefix, 0) != 0) {
    return Fail(ncclInvalidArgument,
                "ncclCommInitRank: the id was not made by this process's ncclGetUniqueId");
  }
  const std::string name = key.substr(std::strlen(kIdPrefix));
  int device = 0;
  (void)cudaGetDevice(&device);
  const double timeout = TimeoutFromEnv();
  std::unique_lock<std::mutex> lock(g_init_mu);
  std::shared_ptr<Pending>& slot = g_pending[key];
  if (slot == nullptr) {
    slot = std::make_shared<Pending>();
    slot->nranks = nranks;
    slot->joined.assign(nranks, false);
  }
  const std::shared_ptr<Pending> p = slot;
  const std::string where = "ncclCommInitRank(" + name + ", rank " + std::to_string(rank) + " of " +
                            std::to_string(nranks) + ")";
  if (p->nranks != nranks) {
    return Fail(ncclInvalidUsage,
                where + ": other ranks of this id said " + std::to_string(p->nranks) + " ranks");
  }
  if (p->joined[rank]) return Fail(ncclInvalidUsage, where + ": rank joined twice");
  p->joined[rank] = true;
  if (++p->count == nranks) {
    p->clique = std::make_shared<Clique>(nranks, name, timeout);
    g_pending.erase(key);  // the id may start another communicator later
    g_init_cv.notify_all();
  } else {
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(timeout));
    if (!g_init_cv.wait_until(lock, deadline, [&] { return p->clique != nullptr; })) {
      p->joined[rank] = false;
      if (--p->count == 0) g_pending.erase(key);
      std::vector<int> missing;
      for (int k = 0; k < nranks; ++k) {
        if (!p->joined[k] && k != rank) missing.push_back(k);
      }
      char secs[32];
      std::snprintf(secs, sizeof(secs), "%g", timeout);
      return Fail(ncclSystemError, where + ": rank(s) " + Ranks(missing) + " did not join within " +
                                       secs + " s (SLUICE_SIMT_NCCL_TIMEOUT)");
    }
  }
  *comm = new ncclComm{std::make_shared<RankState>(p->clique, rank, device)};
  return ncclSuccess;
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                           ncclConfig_t* config) {
  if (comm == nullptr || newcomm == nullptr) {
    return Fail(ncclInvalidArgument, "ncclCommSplit: comm or newcomm is null");
  }
  *newcomm = nullptr;
  const std::shared_ptr<RankState> rs = comm->state;
  const std::string where = "ncclCommSplit on " + rs->Where();
  if (config != nullptr) {
    return Fail(ncclInvalidArgument, where + ": ncclConfig_t is not modelled (pass nullptr)");
  }
  if (color < 0 && color != NCCL_SPLIT_NOCOLOR) {
    return Fail(ncclInvalidArgument, where + ": color " + std::to_string(color));
  }
  if (const ncclResult_t e = rs->CheckAsync()) return e;
  int device = 0;
  (void)cudaGetDevice(&device);
  Clique& c = *rs->clique;
  const uint64_t seq = rs->splits++;
  std::unique_lock<std::mutex> lock(c.mu);
  if (!c.broken.empty()) return Fail(c.broken_code, where + ": " + c.broken);
  Split& sp = c.splits[seq];
  if (sp.arrived == 0) sp.color_key.assign(c.nranks, std::nullopt);
  sp.color_key[rs->rank] = std::make_pair(color, key);
  if (++sp.arrived == c.nranks) {
    // Members of each color in (key, parent rank) order, as NCCL orders them.
    sp.assignment.assign(c.nranks, {nullptr, -1});
    std::map<int, std::vector<std::pair<int, int>>> by_color;  // color -> (key, rank)
    for (int r = 0; r < c.nranks; ++r) {
      const auto [col, k] = *sp.color_key[r];
      if (col != NCCL_SPLIT_NOCOLOR) by_color[col].emplace_back(k, r);
    }
    for (auto& [col, members] : by_color) {
      std::sort(members.begin(), members.end());
      auto child = std::make_shared<Clique>(
          static_cast<int>(members.size()),
          c.name + "/split " + std::to_string(seq) + " color " + std::to_string(col), c.timeout_s);
      for (size_t i = 0; i < members.size(); ++i) {
        sp.assignment[members[i].second] = {child, static_cast<int>(i)};
      }
    }
    sp.ready = true;
    c.cv.notify_all();
  } else {
    const Status st = WaitForRanks(
        c, lock, "split", seq, c.closed_splits, [&](int k) { return sp.color_key[k].has_value(); },
        [&] { return sp.ready; });
    if (!st.ok()) return Fail(c.broken_code, where + ": " + c.broken);
  }
  auto [child, child_rank] = sp.assignment[rs->rank];
  if (++sp.taken == c.nranks) c.splits.erase(seq);
  if (child != nullptr) {
    *newcomm = new ncclComm{std::make_shared<RankState>(std::move(child), child_rank, device)};
  }
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (comm == nullptr) return Fail(ncclInvalidArgument, "ncclCommDestroy: comm is null");
  Close(*comm->state, /*abort=*/false);
  delete comm;
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;  // NCCL accepts a null communicator here
  Close(*comm->state, /*abort=*/true);
  delete comm;
  return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* async_error) {
  if (comm == nullptr || async_error == nullptr) {
    return Fail(ncclInvalidArgument, "ncclCommGetAsyncError: comm or async_error is null");
  }
  std::lock_guard<std::mutex> lock(comm->state->mu);
  *async_error = comm->state->async_error;
  return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  if (comm == nullptr || count == nullptr) return Fail(ncclInvalidArgument, "ncclCommCount");
  *count = comm->state->clique->nranks;
  return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  if (comm == nullptr || rank == nullptr) return Fail(ncclInvalidArgument, "ncclCommUserRank");
  *rank = comm->state->rank;
  return ncclSuccess;
}

ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  if (comm == nullptr || device == nullptr) return Fail(ncclInvalidArgument, "ncclCommCuDevice");
  *device = comm->state->device;
  return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream) {
  Call call;
  call.count = count;
  call.type = datatype;
  call.op = op;
  return Enqueue("ncclAllReduce", comm, call, sendbuff, recvbuff, /*check_send=*/true, stream);
}

ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm,
                           cudaStream_t stream) {
  Call call;
  call.broadcast = true;
  call.count = count;
  call.type = datatype;
  call.root = root;
  // Only the root's sendbuff is read, as in NCCL.
  const bool is_root = comm != nullptr && comm->state->rank == root;
  return Enqueue("ncclBroadcast", comm, call, sendbuff, recvbuff, is_root, stream);
}
