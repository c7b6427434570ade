#include "base/sysio.h"

#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace sluice::sysio {
namespace {

// kUnset until the first call reads SLUICE_FAULT_INJECT; then kOff (the production case: one
// relaxed load per call) or kOn.
enum State : int { kUnset, kOff, kOn };
std::atomic<int> g_state{kUnset};
std::once_flag g_env_once;
std::mutex g_mu;  // guards everything below; taken only when armed
FaultSpec g_spec;
uint64_t g_count = 0;
int g_trace_fd = -1;

void Install(const FaultSpec& spec) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_trace_fd >= 0) ::close(g_trace_fd);
  g_trace_fd = -1;
  g_spec = spec;
  g_count = 0;
  if (spec.kind == FaultSpec::Kind::kTrace) {
    // Raw calls: the trace must not count or fail itself.
    g_trace_fd = ::open(spec.trace_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (g_trace_fd < 0) {
      std::fprintf(stderr, "sluice: SLUICE_FAULT_INJECT: cannot open trace %s: %s\n",
                   spec.trace_path.c_str(), std::strerror(errno));
      std::_Exit(2);
    }
  }
  g_state.store(spec.kind == FaultSpec::Kind::kNone ? kOff : kOn, std::memory_order_release);
}

void ReadEnvironment() {
  const char* env = std::getenv("SLUICE_FAULT_INJECT");
  FaultSpec spec;
  std::string why;
  if (env != nullptr && *env != '\0' && !ParseFaultSpec(env, &spec, &why)) {
    // A test harness asked for something this build does not do: running undisturbed would
    // make the test pass for the wrong reason.
    std::fprintf(stderr, "sluice: SLUICE_FAULT_INJECT=%s: %s\n", env, why.c_str());
    std::_Exit(2);
  }
  Install(spec);
}

// Decides the fate of one call: 0 to proceed (with *n possibly halved for a short transfer),
// else the errno to fail with.
int Decide(Call call, const char* path, size_t* n) {
  int state = g_state.load(std::memory_order_acquire);
  if (state == kUnset) {
    std::call_once(g_env_once, ReadEnvironment);
    state = g_state.load(std::memory_order_acquire);
  }
  if (state != kOn) return 0;
  std::lock_guard<std::mutex> lock(g_mu);
  const FaultSpec& s = g_spec;
  if (!s.match.empty() && std::strstr(path, s.match.c_str()) == nullptr) return 0;
  const bool transfer = call == Call::kRead || call == Call::kWrite;
  if (s.kind == FaultSpec::Kind::kShort && !transfer) return 0;
  const uint64_t index = ++g_count;
  if (s.kind == FaultSpec::Kind::kTrace) {
    char line[64];
    const int len = std::snprintf(line, sizeof line, "%llu %s ",
                                  static_cast<unsigned long long>(index), CallName(call));
    std::string text(line, static_cast<size_t>(len));
    text += path;
    text += '\n';
    // Best effort: a trace that cannot be written shows up as a short trace file.
    (void)!::write(g_trace_fd, text.data(), text.size());
    return 0;
  }
  if (index != s.n) return 0;
  int err = EIO;
  if (s.kind == FaultSpec::Kind::kShort) {
    if (*n <= 1) return 0;  // nothing to shorten
    *n /= 2;
    std::fprintf(stderr, "sluice: fault injection: call %llu (%s %s) moves %zu bytes\n",
                 static_cast<unsigned long long>(index), CallName(call), path, *n);
    return 0;
  }
  if (s.kind == FaultSpec::Kind::kKill) {
    std::fprintf(stderr, "sluice: fault injection: call %llu (%s %s) kills the process\n",
                 static_cast<unsigned long long>(index), CallName(call), path);
    // SIGKILL, not exit: no handler, destructor or buffered write runs, as in a real crash.
    ::kill(::getpid(), SIGKILL);
  }
  if (s.kind == FaultSpec::Kind::kError && call == Call::kWrite) err = ENOSPC;
  std::fprintf(stderr, "sluice: fault injection: call %llu (%s %s) fails with %s\n",
               static_cast<unsigned long long>(index), CallName(call), path, std::strerror(err));
  return err;
}

}  // namespace

const char* CallName(Call c) {
  switch (c) {
    case Call::kOpen: return "open";
    case Call::kRead: return "read";
    case Call::kWrite: return "write";
    case Call::kSync: return "fsync";
    case Call::kTruncate: return "truncate";
    case Call::kRename: return "rename";
    case Call::kLink: return "link";
    case Call::kLock: return "lock";
  }
  return "?";
}

bool ParseFaultSpec(const std::string& text, FaultSpec* spec, std::string* why) {
  *spec = FaultSpec();
  if (text.rfind("trace:", 0) == 0) {
    spec->kind = FaultSpec::Kind::kTrace;
    spec->trace_path = text.substr(6);
    if (spec->trace_path.empty()) *why = "trace: needs a file";
    return !spec->trace_path.empty();
  }
  const size_t c1 = text.find(':');
  const std::string number = text.substr(0, c1);
  char* end = nullptr;
  errno = 0;
  const unsigned long long n = std::strtoull(number.c_str(), &end, 10);
  // strtoull would take "-1" (as 2^64 - 1) and " 1": digits only.
  if (number.empty() || number[0] < '0' || number[0] > '9' || *end != '\0' || errno != 0 ||
      n == 0) {
    *why = "expected trace:FILE or N[:error|eio|short|kill[:MATCH]] with N >= 1";
    return false;
  }
  spec->n = n;
  spec->kind = FaultSpec::Kind::kError;
  if (c1 == std::string::npos) return true;
  const size_t c2 = text.find(':', c1 + 1);
  const std::string kind = text.substr(c1 + 1, c2 == std::string::npos ? c2 : c2 - c1 - 1);
  if (kind == "eio") spec->kind = FaultSpec::Kind::kEio;
  else if (kind == "short") spec->kind = FaultSpec::Kind::kShort;
  else if (kind == "kill") spec->kind = FaultSpec::Kind::kKill;
  else if (kind != "error") {
    *why = "unknown kind '" + kind + "' (error, eio, short or kill)";
    return false;
  }
  if (c2 != std::string::npos) spec->match = text.substr(c2 + 1);
  return true;
}

void ArmFaults(const FaultSpec& spec) {
  std::call_once(g_env_once, [] {});  // the test's spec wins over the environment
  Install(spec);
}

uint64_t FaultCallsCounted() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_state.load() == kOn ? g_count : 0;
}

namespace {

// Runs `real(n)` unless the injector fails this call: then -1 with its errno. `n` is the
// transfer's size (halved for a short one); 0 for calls that move no bytes.
template <class Real>
auto Guarded(Call call, const char* path, size_t n, Real real) -> decltype(real(n)) {
  if (const int err = Decide(call, path, &n)) {
    errno = err;
    return -1;
  }
  return real(n);
}

// The first iovecs of `iov` covering `n` bytes, the last one cut: a short vectored transfer.
int Truncated(const struct iovec* iov, int count, size_t n, struct iovec* out, int max) {
  int k = 0;
  for (; k < count && k < max && n > 0; ++k) {
    out[k] = iov[k];
    out[k].iov_len = std::min(out[k].iov_len, n);
    n -= out[k].iov_len;
  }
  return k;
}

// preadv or pwritev of `iov`, or of its first n bytes when the injector shortens it.
template <class Op>
ssize_t Vectored(Call call, Op op, int fd, const struct iovec* iov, int count, off_t offset,
                 const char* path) {
  size_t total = 0;
  for (int i = 0; i < count; ++i) total += iov[i].iov_len;
  return Guarded(call, path, total, [&](size_t n) {
    if (n == total) return op(fd, iov, count, offset);
    struct iovec cut[16];
    return op(fd, cut, Truncated(iov, count, n, cut, 16), offset);
  });
}

}  // namespace

int Open(const char* path, int flags, mode_t mode) {
  return Guarded(Call::kOpen, path, 0, [&](size_t) { return ::open(path, flags, mode); });
}

ssize_t Read(int fd, void* buf, size_t n, const char* path) {
  return Guarded(Call::kRead, path, n, [&](size_t m) { return ::read(fd, buf, m); });
}

ssize_t Pread(int fd, void* buf, size_t n, off_t offset, const char* path) {
  return Guarded(Call::kRead, path, n, [&](size_t m) { return ::pread(fd, buf, m, offset); });
}

ssize_t Write(int fd, const void* buf, size_t n, const char* path) {
  return Guarded(Call::kWrite, path, n, [&](size_t m) { return ::write(fd, buf, m); });
}

ssize_t Preadv(int fd, const struct iovec* iov, int count, off_t offset, const char* path) {
  return Vectored(Call::kRead, ::preadv, fd, iov, count, offset, path);
}

ssize_t Pwritev(int fd, const struct iovec* iov, int count, off_t offset, const char* path) {
  return Vectored(Call::kWrite, ::pwritev, fd, iov, count, offset, path);
}

int Fsync(int fd, const char* path) {
  return Guarded(Call::kSync, path, 0, [&](size_t) { return ::fsync(fd); });
}

int Ftruncate(int fd, off_t length, const char* path) {
  return Guarded(Call::kTruncate, path, 0, [&](size_t) { return ::ftruncate(fd, length); });
}

int Rename(const char* from, const char* to) {
  return Guarded(Call::kRename, to, 0, [&](size_t) { return ::rename(from, to); });
}

int Link(const char* from, const char* to) {
  return Guarded(Call::kLink, to, 0, [&](size_t) { return ::link(from, to); });
}

int Flock(int fd, int operation, const char* path) {
  return Guarded(Call::kLock, path, 0, [&](size_t) { return ::flock(fd, operation); });
}

namespace {

const char* FileKind(mode_t mode) {
  if (S_ISFIFO(mode)) return "FIFO";
  if (S_ISDIR(mode)) return "directory";
  if (S_ISSOCK(mode)) return "socket";
  if (S_ISCHR(mode)) return "character device";
  if (S_ISBLK(mode)) return "block device";
  return "special file";
}

}  // namespace

Status OpenRegular(const std::string& path, int flags, int* fd, struct stat* st_out,
                   int* open_errno) {
  if (open_errno != nullptr) *open_errno = 0;
  *fd = Open(path.c_str(), flags | O_NONBLOCK);
  if (*fd < 0) {
    const int err = errno;
    if (open_errno != nullptr) *open_errno = err;
    if (err == ENOENT || err == ENOTDIR) return Status::NotFound(path + ": no such file");
    if (err == EISDIR) return Status::InvalidArgument(path + ": not a regular file (directory)");
    return Status::IOError(path + ": open: " + std::strerror(err));
  }
  struct stat st;
  Status result;
  if (::fstat(*fd, &st) != 0) {
    result = Status::IOError(path + ": fstat: " + std::strerror(errno));
  } else if (!S_ISREG(st.st_mode)) {
    result = Status::InvalidArgument(path + ": not a regular file (" + FileKind(st.st_mode) +
                                     "). HINT: give the path of a file; a pipe or device as an "
                                     "input would block the run");
  } else if ((flags & O_NONBLOCK) == 0) {
    const int fl = ::fcntl(*fd, F_GETFL);
    if (fl < 0 || ::fcntl(*fd, F_SETFL, fl & ~O_NONBLOCK) != 0)
      result = Status::IOError(path + ": fcntl: " + std::strerror(errno));
  }
  if (!result.ok()) {
    ::close(*fd);
    *fd = -1;
    return result;
  }
  if (st_out != nullptr) *st_out = st;
  return Status::OK();
}

Status PreadFully(int fd, const std::string& name, uint64_t offset, size_t n, char* dst) {
  size_t done = 0;
  while (done < n) {
    const ssize_t r =
        Pread(fd, dst + done, n - done, static_cast<off_t>(offset + done), name.c_str());
    if (r < 0) {
      if (errno == EINTR) continue;
      return Status::IOError(name + ": read of " + std::to_string(n) + " bytes at offset " +
                             std::to_string(offset) + ": " + std::strerror(errno));
    }
    if (r == 0) {
      return Status::IOError(name + ": short read at offset " + std::to_string(offset + done) +
                             " (wanted " + std::to_string(n) + " bytes at " +
                             std::to_string(offset) + ")");
    }
    done += static_cast<size_t>(r);
  }
  return Status::OK();
}

}  // namespace sluice::sysio
