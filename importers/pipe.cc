#include "importers/pipe.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

extern char** environ;

namespace sluice::importers {
namespace {

constexpr size_t kMaxOutput = size_t{1} << 31;
constexpr size_t kStderrKept = 1000;

struct Fds {
  int fd[2] = {-1, -1};
  ~Fds() {
    for (int f : fd)
      if (f >= 0) ::close(f);
  }
};

}  // namespace

Status RunPipe(const std::string& name, const std::string& command, double timeout_seconds,
               std::string* out) {
  out->clear();
  Fds o, e;
  if (::pipe2(o.fd, O_CLOEXEC) != 0 || ::pipe2(e.fd, O_CLOEXEC) != 0)
    return Status::IOError(name + ": pipe: " + std::strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, o.fd[1], 1);
  posix_spawn_file_actions_adddup2(&fa, e.fd[1], 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setpgroup(&attr, 0);  // its own group: a timeout kills the whole pipeline
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  const char* argv[] = {"/bin/sh", "-c", command.c_str(), nullptr};
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, "/bin/sh", &fa, &attr, const_cast<char**>(argv), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return Status::IOError(name + ": cannot start /bin/sh: " + std::strerror(rc));
  ::close(o.fd[1]);
  o.fd[1] = -1;
  ::close(e.fd[1]);
  e.fd[1] = -1;

  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  std::string err;
  std::string why;
  char buf[1 << 16];
  bool out_open = true, err_open = true;
  while (out_open || err_open) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      why = "ran past the --pipe-timeout of " + std::to_string(timeout_seconds).substr(0, 8) +
            " s and was killed";
      break;
    }
    pollfd p[2] = {{out_open ? o.fd[0] : -1, POLLIN, 0}, {err_open ? e.fd[0] : -1, POLLIN, 0}};
    const int n = ::poll(p, 2, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (n < 0 && errno != EINTR) {
      why = std::string("poll: ") + std::strerror(errno);
      break;
    }
    for (int i = 0; i < 2 && n > 0; ++i) {
      if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t got = ::read(p[i].fd, buf, sizeof buf);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        (i == 0 ? out_open : err_open) = false;
        continue;
      }
      if (i == 0) {
        out->append(buf, static_cast<size_t>(got));
      } else {
        err.append(buf, static_cast<size_t>(got));
        if (err.size() > 2 * kStderrKept) err.erase(0, err.size() - kStderrKept);
      }
    }
    if (out->size() > kMaxOutput) {
      why = "wrote more than 2 GiB to stdout";
      break;
    }
  }
  if (!why.empty()) ::kill(-pid, SIGKILL);
  int wstatus = 0;
  while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  if (why.empty()) {
    if (WIFSIGNALED(wstatus)) why = std::string("died of signal ") + strsignal(WTERMSIG(wstatus));
    else if (WEXITSTATUS(wstatus) != 0)
      why = "exited with status " + std::to_string(WEXITSTATUS(wstatus));
    else if (out->empty()) why = "wrote no audio to stdout";
  }
  if (why.empty()) return Status::OK();
  if (err.size() > kStderrKept) err.erase(0, err.size() - kStderrKept);
  while (!err.empty() && (err.back() == '\n' || err.back() == '\r')) err.pop_back();
  out->clear();
  return Status::InvalidArgument(name + ": command \"" + command + "\" " + why +
                                 (err.empty() ? std::string("; no stderr") : "; stderr: " + err));
}

}  // namespace sluice::importers
