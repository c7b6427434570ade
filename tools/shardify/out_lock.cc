#include "out_lock.h"

#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "base/sysio.h"

namespace sluice::shardify {
namespace fs = std::filesystem;
namespace {

std::string Errno(int err) { return std::strerror(err); }

std::string HostName() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) return "?";
  return host;
}

std::string NowUtc() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

// Who holds the lock, from what it wrote: "pid 123 on host n1, started ...: shardify audio".
std::string Holder(int fd, const std::string& path) {
  char buf[4096];
  const ssize_t n = sysio::Pread(fd, buf, sizeof buf, 0, path.c_str());
  const nlohmann::json j =
      n > 0 ? nlohmann::json::parse(std::string(buf, static_cast<size_t>(n)), nullptr, false)
            : nlohmann::json();
  if (!j.is_object() || !j.contains("pid"))  // it has the lock but has not written its name yet
    return "another process, which has not recorded its name yet";
  return "pid " + j["pid"].dump() + " on host " + j.value("host", "?") + ", started " +
         j.value("started", "?") + ": " + j.value("command", "?");
}

// Whether `fd` is still the file at `path`: a holder removes the file as its last step, so a run
// that opened it just before can lock a file nobody else will ever open again.
bool StillThere(int fd, const std::string& path) {
  struct stat a, b;
  return ::fstat(fd, &a) == 0 && ::stat(path.c_str(), &b) == 0 && a.st_dev == b.st_dev &&
         a.st_ino == b.st_ino;
}

}  // namespace

OutDirLock::~OutDirLock() {
  std::error_code ec;
  fs::remove(path_, ec);  // while still holding the lock: see StillThere
  ::close(fd_);
}

Status OutDirLock::Acquire(const std::string& dir, const std::string& command,
                           std::unique_ptr<OutDirLock>* out) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::IOError(dir + ": cannot create directory: " + ec.message());
  const std::string path = dir + "/" + kLockName;
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int fd = sysio::Open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return Status::IOError(path + ": open: " + Errno(errno));
    if (sysio::Flock(fd, LOCK_EX | LOCK_NB, path.c_str()) != 0) {
      const int err = errno;
      if (err != EWOULDBLOCK) {
        ::close(fd);
        return Status::IOError(path + ": flock: " + Errno(err));
      }
      const std::string holder = Holder(fd, path);
      ::close(fd);
      return Status::InvalidArgument(
          dir + " is being written by " + holder + " (it holds " + path +
          "). HINT: wait for that run to finish, or choose another --out; two runs writing "
          "one directory would mix their files");
    }
    if (!StillThere(fd, path)) {
      ::close(fd);
      continue;
    }
    std::unique_ptr<OutDirLock> lock(new OutDirLock(path, fd));
    // A crashed holder's record may still be there: replace it.
    const std::string me = nlohmann::json{{"pid", static_cast<long long>(::getpid())},
                                          {"host", HostName()},
                                          {"started", NowUtc()},
                                          {"command", command}}
                               .dump() +
                           "\n";
    if (sysio::Ftruncate(fd, 0, path.c_str()) != 0)
      return Status::IOError(path + ": truncate: " + Errno(errno));
    for (size_t done = 0; done < me.size();) {  // a short write is retried, never an error
      const ssize_t w = sysio::Write(fd, me.data() + done, me.size() - done, path.c_str());
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        return Status::IOError(path + ": write of " + std::to_string(me.size() - done) +
                               " bytes at offset " + std::to_string(done) + ": " +
                               (w < 0 ? Errno(errno) : "nothing written"));
      }
      done += static_cast<size_t>(w);
    }
    *out = std::move(lock);
    return Status::OK();
  }
  return Status::IOError(path + ": the lock file kept being replaced while it was locked");
}

}  // namespace sluice::shardify
