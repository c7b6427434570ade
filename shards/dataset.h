// Dataset: a directory of shards plus manifest.json, opened as one unit.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "shards/manifest.h"
#include "shards/shard_reader.h"

namespace sluice::shards {

class Dataset {
 public:
  // Loads the manifest and opens every shard (footer and index only; payload
  // is read on demand). Fails if a shard is missing, its footer is not the one the manifest
  // records (another version of the dataset: caught mid-update), or its record count or size
  // disagrees with the manifest.
  static Status Open(const std::string& dir, const ReadOptions& options,
                     std::unique_ptr<Dataset>* out);
  // The same wherever the files live (storage/OpenStorage: a directory, an HTTP or S3 prefix).
  static Status Open(std::shared_ptr<const Storage> storage, const ReadOptions& options,
                     std::unique_ptr<Dataset>* out);

  // The directory or URL the dataset was opened from.
  const std::string& dir() const { return storage_->location(); }
  const Storage& storage() const { return *storage_; }
  const Manifest& manifest() const { return manifest_; }
  size_t num_shards() const { return shards_.size(); }
  const ShardReader& shard(size_t i) const { return *shards_[i]; }
  uint64_t num_records() const { return manifest_.records; }

 private:
  std::shared_ptr<const Storage> storage_;
  Manifest manifest_;
  std::vector<std::unique_ptr<ShardReader>> shards_;
};

struct VerifyProblem {
  std::string shard;    // file name
  std::string message;  // names block and offset
};

struct VerifyReport {
  uint64_t shards = 0;
  uint64_t blocks = 0;
  uint64_t records = 0;
  uint64_t bytes = 0;
  std::vector<VerifyProblem> problems;
  bool ok() const { return problems.empty(); }
};

// Reads every byte of every shard: whole-file checksum against the manifest,
// footer (against the manifest's footer_xxh3, when it records one), index, every block
// checksum and every record's field layout. Keeps
// going after a problem so the report lists all of them. `progress` (may be
// empty) is called with bytes checked so far after each block.
Status VerifyDataset(
    const std::string& dir, VerifyReport* report,
    const std::function<void(uint64_t bytes_done, uint64_t bytes_total)>& progress = {});
Status VerifyDataset(
    const Storage& storage, VerifyReport* report,
    const std::function<void(uint64_t bytes_done, uint64_t bytes_total)>& progress = {});

// Checks one shard file (everything but the manifest's whole-file checksum).
void VerifyShard(const ShardReader& reader, const std::string& shard_name, VerifyReport* report);

}  // namespace sluice::shards
