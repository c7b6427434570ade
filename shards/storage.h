// Storage: where one dataset's files live, the seam between shards/ and storage/ (remote reads,
// the block cache). Files are read through base/file.h's RandomAccessFile.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "base/file.h"
#include "base/status.h"
#include "shards/storage_counters.h"

namespace sluice::shards {

// Where one dataset's files live (leveldb's Env, per dataset): a local directory here; an HTTP(S)
// or S3 prefix with a local block cache in storage/ (docs/remote.md). Names are relative to the
// location ("manifest.json", "shard-00001.sluice"). Safe to use from many threads.
class Storage {
 public:
  virtual ~Storage() = default;
  // The directory or URL prefix as the user gave it, a URL's password hidden (storage/url.h,
  // RedactUrl): this and Where() are what messages, banners and cache keys show.
  virtual const std::string& location() const = 0;
  // "dir/name" or "https://host/prefix/name": what error messages name.
  virtual std::string Where(const std::string& name) const = 0;
  // The whole of a small file (manifest.json). NotFound when it does not exist.
  virtual Status ReadFile(const std::string& name, std::string* out) const = 0;
  // Opens `name` for reads. `expected_size` is what manifest.json says: remote storage trusts it
  // (a HEAD request per shard would cost a round trip each); a local directory reports the file's
  // real size, which Dataset::Open compares with the manifest.
  virtual Status OpenFile(const std::string& name, uint64_t expected_size,
                          std::unique_ptr<RandomAccessFile>* out) const = 0;
  virtual StorageCounters Counters() const { return {}; }
  // Why location() cannot be a dataset, for the error of a missing manifest.json: a local path
  // that is a file ("... is a file ...", with a hint) or does not exist. OK for a directory, and
  // where the storage cannot tell (a URL prefix is no object of its own).
  virtual Status CheckIsDirectory() const { return Status::OK(); }
};

// A local dataset directory.
std::shared_ptr<const Storage> NewLocalStorage(std::string dir);

}  // namespace sluice::shards
