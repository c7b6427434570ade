// Storage over a local dataset directory (shards/storage.h). Shard files borrow descriptors from
// the process-wide FdCache (shards/fd_cache.h), so the number of shards is not bounded by
// `ulimit -n`; small files (manifest.json) are read whole and closed.
#include "shards/fd_cache.h"
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

 private:
  std::string dir_;
};

}  // namespace

std::shared_ptr<const Storage> NewLocalStorage(std::string dir) {
  return std::make_shared<LocalStorage>(std::move(dir));
}

}  // namespace sluice::shards
