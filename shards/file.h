// The I/O seam (leveldb's Env, trimmed): shard readers see a RandomAccessFile,
// so tests and the fuzzer hand them in-memory bytes, and production uses pread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"
#include "shards/storage_counters.h"

namespace sluice::shards {

class RandomAccessFile {
 public:
  virtual ~RandomAccessFile() = default;
  // Reads exactly n bytes at offset into dst. A short read is an IOError that
  // names the file, the offset and the length. Safe to call from many threads.
  virtual Status Read(uint64_t offset, size_t n, char* dst) const = 0;
  virtual uint64_t Size() const = 0;
  virtual const std::string& name() const = 0;
  // A hint that [offset, offset + n) will be Read soon. A remote file starts fetching it, so the
  // loader's serial read stage does not wait out one round trip per block; a local file ignores
  // it (the page cache and the kernel's read-ahead do that job).
  virtual void WillNeed(uint64_t offset, size_t n) const {
    (void)offset;
    (void)n;
  }
};

Status OpenRandomAccessFile(const std::string& path, std::unique_ptr<RandomAccessFile>* out);

// Where one dataset's files live (leveldb's Env, per dataset): a local directory here; an HTTP(S)
// or S3 prefix with a local block cache in storage/ (docs/remote.md). Names are relative to the
// location ("manifest.json", "shard-00001.sluice"). Safe to use from many threads.
class Storage {
 public:
  virtual ~Storage() = default;
  // The directory or URL prefix as the user gave it.
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
};

// A local dataset directory.
std::shared_ptr<const Storage> NewLocalStorage(std::string dir);
std::unique_ptr<RandomAccessFile> NewMemoryFile(std::string name, std::string contents);

// Sequential writer with a buffer; Close() flushes and fsyncs.
class WritableFile {
 public:
  ~WritableFile();
  static Status Create(const std::string& path, std::unique_ptr<WritableFile>* out);
  Status Append(std::string_view data);
  Status Close();  // flush + fsync + close; idempotent
  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  WritableFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  Status Flush();
  Status WriteAll(std::string_view data);
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
  std::string buf_;
};

// Writes `contents` to path.tmp, fsyncs, renames over path and fsyncs the
// directory: readers see the old file or the whole new one, never a part.
Status WriteFileAtomic(const std::string& path, std::string_view contents);
// Renames and fsyncs the containing directory.
Status RenameDurable(const std::string& from, const std::string& to);
Status ReadFileToString(const std::string& path, std::string* out);

}  // namespace sluice::shards
