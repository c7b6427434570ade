// Opening a dataset wherever it lives: a local directory, `http(s)://host/prefix` or
// `s3://bucket/prefix` (docs/remote.md). The rest of sluice sees a shards::Storage and the
// RandomAccessFile seam; HTTP, signing, retries and the block cache stay in this folder.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "shards/dataset.h"
#include "shards/storage.h"
#include "storage/options.h"

namespace sluice::storage {

// True for http://, https:// and s3:// locations.
bool IsRemote(const std::string& location);

Status OpenStorage(const std::string& location, const StorageOptions& options,
                   std::shared_ptr<const shards::Storage>* out);

// OpenStorage, then shards::Dataset::Open.
Status OpenDataset(const std::string& location, const StorageOptions& options,
                   const shards::ReadOptions& read_options,
                   std::unique_ptr<shards::Dataset>* out);

}  // namespace sluice::storage
