// A dataset on an HTTP(S) server or in an S3 bucket: shards::Storage over an HttpFetcher
// (docs/remote.md). Files are read with range requests; sizes come from manifest.json (no HEAD
// per shard). S3 requests are signed by libcurl (CURLOPT_AWS_SIGV4) with the credentials
// s3_credentials.h finds.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "shards/storage.h"
#include "storage/options.h"
#include "storage/s3_credentials.h"

namespace sluice::storage {

// `location` is http(s)://... or s3://...; `env` supplies the AWS variables (ProcessEnv()).
Status NewRemoteStorage(const std::string& location, const StorageOptions& options,
                        const EnvLookup& env, std::shared_ptr<const shards::Storage>* out);

}  // namespace sluice::storage
