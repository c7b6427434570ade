// Storage over a local dataset directory (shards/storage.h). Shard files borrow descriptors from
// the process-wide FdCache (shards/fd_cache.h), so the number of shards is not bounded by
// `ulimit -n`; small files (manifest.json) are read whole and closed.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/sysio.h"
#include "shards/fd_cache.h"
#include "shards/manifest.h"
#include "shards/storage.h"

namespace sluice::shards {
namespace {

class LocalStorage final : public Storage {
 public:
  explicit LocalStorage(std::string dir) : dir_(std::move(dir)) {}
  const std::string& location() const override { return dir_; }
  std::string Where(const std::string& name) const override { return dir_ + "/" + name; }
  Status ReadFile(const std::string& name, std::string* out) const override {
    return ReadFileToString(Where(name), out);
  }
  Status OpenFile(const std::string& name, uint64_t /*expected_size*/,
                  std::unique_ptr<RandomAccessFile>* out) const override {
    return OpenCachedFile(Where(name), &FdCache::Global(), out);
  }
  Status CheckIsDirectory() const override {
    int fd = -1, err = 0;
    struct stat st;
    const Status s = sysio::OpenRegular(dir_, O_RDONLY | O_CLOEXEC, &fd, &st, &err);
    if (err == ENOENT) return Status::NotFound(dir_ + ": no such directory");
    if (!s.ok()) return Status::OK();  // a directory (not a regular file), or unreadable: as before
    ::close(fd);
    // A file of a dataset (its manifest, a shard) names the dataset it is in.
    const size_t slash = dir_.find_last_of('/');
    const std::string base = slash == std::string::npos ? dir_ : dir_.substr(slash + 1);
    const std::string parent = slash == std::string::npos ? "." : dir_.substr(0, slash);
    const bool of_dataset = base == kManifestName || base.rfind("shard-", 0) == 0;
    return Status::InvalidArgument(
        dir_ + " is a file, not a dataset directory (the directory shardify writes: " +
        kManifestName + " and shard files). HINT: " +
        (of_dataset ? "give its directory, " + parent
                    : std::string("give the directory of shardify's --out")));
  }

 private:
  std::string dir_;
};

}  // namespace

std::shared_ptr<const Storage> NewLocalStorage(std::string dir) {
  return std::make_shared<LocalStorage>(std::move(dir));
}

}  // namespace sluice::shards
