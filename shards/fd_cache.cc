#include "shards/fd_cache.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/sysio.h"

namespace sluice::shards {
namespace {

// A shard file that holds no descriptor: each read borrows one from the cache.
class CachedFile final : public RandomAccessFile {
 public:
  CachedFile(std::string name, FdCache* cache, uint64_t key, FileIdentity identity)
      : name_(std::move(name)), cache_(cache), key_(key), identity_(identity) {}
  ~CachedFile() override { cache_->Forget(key_); }

  Status Read(uint64_t offset, size_t n, char* dst) const override {
    std::shared_ptr<CachedFd> fd;  // keeps the descriptor open until this read is done
    SLUICE_RETURN_IF_ERROR(cache_->Get(key_, name_, identity_, &fd));
    return sysio::PreadFully(fd->fd(), name_, offset, n, dst);
  }
  uint64_t Size() const override { return identity_.size; }
  const std::string& name() const override { return name_; }

 private:
  std::string name_;
  FdCache* cache_;
  uint64_t key_;
  FileIdentity identity_;
};

FileIdentity IdentityOf(const struct stat& st) {
  return {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
          static_cast<uint64_t>(st.st_size)};
}

}  // namespace

CachedFd::~CachedFd() { ::close(fd_); }

size_t DefaultFdCapacity() {
  struct rlimit rl;
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return 512;
  return std::max<size_t>(4, std::min<size_t>(rl.rlim_cur / 4, 512));
}

FdCache::~FdCache() = default;

FdCache& FdCache::Global() {
  // Never destroyed: files may outlive static destruction at exit.
  static FdCache* cache = new FdCache(0);
  return *cache;
}

size_t FdCache::capacity() const {
  return fixed_capacity_ > 0 ? fixed_capacity_ : DefaultFdCapacity();
}

size_t FdCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

uint64_t FdCache::opens() const {
  std::lock_guard<std::mutex> lock(mu_);
  return opens_;
}

uint64_t FdCache::NewKey() {
  std::lock_guard<std::mutex> lock(mu_);
  return next_key_++;
}

void FdCache::EvictLocked(size_t keep, std::vector<std::shared_ptr<CachedFd>>* closed) {
  while (entries_.size() > keep) {
    const auto it = entries_.find(lru_.back());
    closed->push_back(std::move(it->second.fd));
    entries_.erase(it);
    lru_.pop_back();
  }
}

Status FdCache::OpenRetrying(const std::string& path, int* fd) {
  while (true) {
    *fd = sysio::Open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (*fd >= 0) {
      std::lock_guard<std::mutex> lock(mu_);
      ++opens_;
      return Status::OK();
    }
    const int err = errno;
    if (err == EINTR) continue;
    if (err == ENOENT) return Status::NotFound(path + ": no such file");
    if (err != EMFILE && err != ENFILE) return Status::IOError(path + ": open: " + strerror(err));
    // Out of descriptors: give one back and try again. An evicted descriptor a read still uses
    // closes only when that read ends, so this may take several; it ends when none is left.
    std::vector<std::shared_ptr<CachedFd>> closed;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!entries_.empty()) EvictLocked(entries_.size() - 1, &closed);
    }
    if (closed.empty()) {
      struct rlimit rl;
      const std::string limit = ::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
                                    ? std::to_string(rl.rlim_cur)
                                    : "unknown";
      return Status::IOError(path + ": open: " + strerror(err) +
                             " (the shard descriptor cache has none left to give back; "
                             "RLIMIT_NOFILE soft limit " +
                             limit +
                             "). HINT: raise the limit (ulimit -n), or close descriptors the "
                             "process holds");
    }
  }
}

Status FdCache::Get(uint64_t key, const std::string& path, const FileIdentity& identity,
                    std::shared_ptr<CachedFd>* out) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto it = entries_.find(key);
    if (it != entries_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second.lru);
      *out = it->second.fd;
      return Status::OK();
    }
  }
  int raw = -1;
  SLUICE_RETURN_IF_ERROR(OpenRetrying(path, &raw));
  auto fd = std::make_shared<CachedFd>(raw);
  struct stat st;
  if (::fstat(raw, &st) != 0) return Status::IOError(path + ": stat: " + strerror(errno));
  const FileIdentity now = IdentityOf(st);
  if (now.device != identity.device || now.inode != identity.inode || now.size != identity.size)
    return Status::IOError(
        path + ": changed since the dataset was opened (was inode " +
        std::to_string(identity.inode) + ", " + std::to_string(identity.size) +
        " bytes; now inode " + std::to_string(now.inode) + ", " + std::to_string(now.size) +
        " bytes). HINT: a dataset must not be rewritten while a loader reads it");
  Put(key, fd);
  *out = std::move(fd);
  return Status::OK();
}

void FdCache::Put(uint64_t key, std::shared_ptr<CachedFd> fd) {
  const size_t cap = capacity();
  std::vector<std::shared_ptr<CachedFd>> closed;  // released after the lock
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = entries_.find(key);
  if (it != entries_.end()) {  // two reads of one file opened it at once: keep the newer
    closed.push_back(std::move(it->second.fd));
    it->second.fd = std::move(fd);
    lru_.splice(lru_.begin(), lru_, it->second.lru);
  } else {
    lru_.push_front(key);
    entries_.emplace(key, Entry{std::move(fd), lru_.begin()});
  }
  EvictLocked(cap, &closed);
}

void FdCache::Forget(uint64_t key) {
  std::shared_ptr<CachedFd> closed;
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = entries_.find(key);
  if (it == entries_.end()) return;
  closed = std::move(it->second.fd);
  lru_.erase(it->second.lru);
  entries_.erase(it);
}

Status OpenCachedFile(const std::string& path, FdCache* cache,
                      std::unique_ptr<RandomAccessFile>* out) {
  int raw = -1;
  SLUICE_RETURN_IF_ERROR(cache->OpenRetrying(path, &raw));
  auto fd = std::make_shared<CachedFd>(raw);
  struct stat st;
  if (::fstat(raw, &st) != 0) return Status::IOError(path + ": stat: " + strerror(errno));
  if (!S_ISREG(st.st_mode)) return Status::IOError(path + ": not a regular file");
  const uint64_t key = cache->NewKey();
  cache->Put(key, std::move(fd));
  *out = std::make_unique<CachedFile>(path, cache, key, IdentityOf(st));
  return Status::OK();
}

}  // namespace sluice::shards
