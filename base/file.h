// File helpers every folder uses, each call through base/sysio.h (the fault injector):
// RandomAccessFile, the read seam (leveldb's Env, trimmed) that shard readers, the block cache
// and checkpoints see, so tests and fuzzers hand them in-memory bytes and production uses pread;
// a buffered, fsyncing writer; a line reader; atomic and durable whole-file writes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"

namespace sluice {

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
  // Read, for bytes whose XXH3-64 the caller knows (a block, a shard's index, its footer): a file
  // that keeps copies (the block cache) keeps and serves only bytes that have it, so a damaged
  // response or another version of the file never outlives one read. The bytes may still not
  // match: the caller checks them, as it would after Read.
  virtual Status ReadVerified(uint64_t offset, size_t n, uint64_t xxh3, char* dst) const {
    (void)xxh3;
    return Read(offset, n, dst);
  }
};

Status OpenRandomAccessFile(const std::string& path, std::unique_ptr<RandomAccessFile>* out);

std::unique_ptr<RandomAccessFile> NewMemoryFile(std::string name, std::string contents);

// Sequential writer with a buffer; Close() flushes and fsyncs. Every call goes through
// base/sysio.h, so the fault injector reaches it; errors name the file, the call and the offset.
class WritableFile {
 public:
  ~WritableFile();
  // A new, empty file (truncated if it exists).
  static Status Create(const std::string& path, std::unique_ptr<WritableFile>* out);
  // An append-only log (a journal, rejects.jsonl) continued after a crash: cut back to its first
  // `keep_bytes` (what the last durable journal line vouches for), created when keep_bytes is 0.
  static Status OpenForAppend(const std::string& path, uint64_t keep_bytes,
                              std::unique_ptr<WritableFile>* out);
  Status Append(std::string_view data);
  Status Sync();   // flush + fsync: what was appended survives a crash
  Status Close();  // flush + fsync + close; idempotent
  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  WritableFile(std::string path, int fd, uint64_t size)
      : path_(std::move(path)), fd_(fd), size_(size), written_(size) {}
  Status Flush();
  Status WriteAll(std::string_view data);
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;     // bytes appended, buffered or not
  uint64_t written_ = 0;  // bytes handed to the kernel: the offset errors name
  std::string buf_;
};

// Reads a text file line by line in large chunks. Unlike std::getline, a read error is an
// error (naming file and offset), never an early end of file: a failing disk must not make an
// input manifest silently shorter.
class LineReader {
 public:
  ~LineReader();
  // NotFound when the file does not exist.
  static Status Open(const std::string& path, std::unique_ptr<LineReader>* out);
  // The next line without its "\n" (a final line without one counts). false at the end of the
  // file or on an error, which *status then holds.
  bool Next(std::string* line, Status* status);
  const std::string& path() const { return path_; }
  // Bytes searched for a line end so far: each byte of the file once, whatever the line lengths
  // (what a test checks to prove a long line costs linear time).
  uint64_t bytes_searched() const { return bytes_searched_; }

 private:
  LineReader(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string path_;
  int fd_;
  uint64_t offset_ = 0;  // of buf_'s end in the file
  std::string buf_;
  size_t pos_ = 0;
  size_t scanned_ = 0;  // buf_[pos_, scanned_) holds no "\n"
  uint64_t bytes_searched_ = 0;
  bool eof_ = false;
};

// Writes `contents` to path.tmp, fsyncs, renames over path and fsyncs the
// directory: readers see the old file or the whole new one, never a part.
Status WriteFileAtomic(const std::string& path, std::string_view contents);
// Renames and fsyncs the containing directory.
Status RenameDurable(const std::string& from, const std::string& to);
Status ReadFileToString(const std::string& path, std::string* out);
// Hard-links `from` as `to` (replacing `to`), or copies it where a link cannot be made (another
// file system): the copy goes to to.tmp, is fsynced and renamed, so `to` is whole or absent.
Status LinkOrCopyFile(const std::string& from, const std::string& to);

}  // namespace sluice
