#include "storage/open.h"

#include "storage/block_cache.h"
#include "storage/remote_storage.h"

namespace sluice::storage {

bool IsRemote(const std::string& location) {
  return location.starts_with("http://") || location.starts_with("https://") ||
         location.starts_with("s3://");
}

Status OpenStorage(const std::string& location, const StorageOptions& options,
                   std::shared_ptr<const shards::Storage>* out) {
  if (IsRemote(location))
    SLUICE_RETURN_IF_ERROR(NewRemoteStorage(location, options, ProcessEnv(), out));
  else
    *out = shards::NewLocalStorage(location);
  return CacheRemoteStorage(location, options, out);  // block_cache.h: remote ones only
}

Status OpenDataset(const std::string& location, const StorageOptions& options,
                   const shards::ReadOptions& read_options, std::unique_ptr<shards::Dataset>* out) {
  std::shared_ptr<const shards::Storage> storage;
  SLUICE_RETURN_IF_ERROR(OpenStorage(location, options, &storage));
  return shards::Dataset::Open(std::move(storage), read_options, out);
}

}  // namespace sluice::storage
