// The I/O seam (leveldb's Env, trimmed): shard readers see a RandomAccessFile,
// so tests and the fuzzer hand them in-memory bytes, and production uses pread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"

namespace sluice::shards {

class RandomAccessFile {
 public:
  virtual ~RandomAccessFile() = default;
  // Reads exactly n bytes at offset into dst. A short read is an IOError that
  // names the file, the offset and the length. Safe to call from many threads.
  virtual Status Read(uint64_t offset, size_t n, char* dst) const = 0;
  virtual uint64_t Size() const = 0;
  virtual const std::string& name() const = 0;
};

Status OpenRandomAccessFile(const std::string& path, std::unique_ptr<RandomAccessFile>* out);
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
