// The system calls every sluice file access goes through, with a fault injector in front
// (SQLite's test VFS and leveldb's FaultInjectionTestEnv, at the level of the calls): a test
// can make the N-th call of a process fail with EIO or ENOSPC, or move fewer bytes than asked,
// and then check that the process reports it, leaves nothing half-written under a final name,
// and that a rerun produces what an undisturbed run does (docs/testing.md, "Fault injection").
//
// Each wrapper behaves exactly like the call it wraps (-1 with errno on failure) and costs one
// relaxed atomic load when no fault is armed. `path` names the file for the trace and the
// injector's report only; the caller's own error message names file, offset and call.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <cstdint>
#include <string>

#include "base/status.h"

namespace sluice::sysio {

int Open(const char* path, int flags, mode_t mode = 0);
ssize_t Read(int fd, void* buf, size_t n, const char* path);
ssize_t Pread(int fd, void* buf, size_t n, off_t offset, const char* path);
ssize_t Write(int fd, const void* buf, size_t n, const char* path);
// Vectored reads and writes count as one read or write; "short" moves half of their total.
ssize_t Preadv(int fd, const struct iovec* iov, int count, off_t offset, const char* path);
ssize_t Pwritev(int fd, const struct iovec* iov, int count, off_t offset, const char* path);
int Fsync(int fd, const char* path);
int Ftruncate(int fd, off_t length, const char* path);
int Rename(const char* from, const char* to);
int Link(const char* from, const char* to);
// flock(2): an injected failure is EIO, never EWOULDBLOCK (that stays "another process holds it").
int Flock(int fd, int operation, const char* path);

// Opens an input file for reading only when it is a regular file, so a user-supplied path that
// names a FIFO, socket or device is refused instead of hanging: a plain open() of a FIFO blocks
// until some writer appears, and a read of one (or of /dev/zero) may never end. The file is opened
// with O_NONBLOCK (a FIFO's open returns at once), checked with fstat, and O_NONBLOCK cleared.
// `flags` must be a read-only mode (O_RDONLY, with O_CLOEXEC and the like).
// Returns OK with *fd (the caller closes it) and, when `st` is given, its fstat. Errors name the
// path: NotFound (ENOENT, ENOTDIR), InvalidArgument "<path>: not a regular file (FIFO)" (or
// directory, socket, character device, block device), IOError otherwise ("<path>: open: ...").
// `open_errno`, when given, receives open()'s errno on an open failure (0 otherwise), for callers
// that tell a permission problem from a machine fault.
Status OpenRegular(const std::string& path, int flags, int* fd, struct stat* st = nullptr,
                   int* open_errno = nullptr);

// Reads exactly n bytes at offset (retrying short reads and EINTR). An IOError names `name`, the
// offset and the length: errno's reason, or "short read" at the end of the file.
Status PreadFully(int fd, const std::string& name, uint64_t offset, size_t n, char* dst);

// The injector. Armed from the environment at the first call:
//   SLUICE_FAULT_INJECT=trace:FILE       append "<n> <call> <path>" per call to FILE
//   SLUICE_FAULT_INJECT=N[:KIND[:MATCH]] the N-th call (1-based) fails; KIND is
//       error  EIO, or ENOSPC for a write (the default)
//       eio    EIO for every call, writes too
//       short  the N-th read or write moves half the bytes asked (only reads and writes count)
//       kill   the process dies by SIGKILL before making the N-th call: a crash (power cut,
//              kill -9, a preempted node) at a chosen point, the calls before it all made
//     MATCH: count only calls whose path contains MATCH (a checkpoint's name, say).
// The injected call prints "sluice: fault injection: call N (<call> <path>) fails with
// <errno text>" (or "... kills the process") to stderr, so a test can tell which call it hit.
enum class Call : uint8_t { kOpen, kRead, kWrite, kSync, kTruncate, kRename, kLink, kLock };
const char* CallName(Call c);

struct FaultSpec {
  enum class Kind : uint8_t { kNone, kTrace, kError, kEio, kShort, kKill };
  Kind kind = Kind::kNone;
  uint64_t n = 0;          // the call to fail, 1-based
  std::string match;       // only calls whose path contains this count
  std::string trace_path;  // kTrace
};
// Parses the SLUICE_FAULT_INJECT forms above; false (and *why) for anything else.
bool ParseFaultSpec(const std::string& text, FaultSpec* spec, std::string* why);
// Arms the injector in-process (tests); kNone disarms. Resets the call count.
void ArmFaults(const FaultSpec& spec);
// Calls counted since the injector was armed (0 when disarmed).
uint64_t FaultCallsCounted();

}  // namespace sluice::sysio
