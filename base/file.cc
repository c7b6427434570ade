#include "base/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "base/sysio.h"

namespace sluice {
namespace {

std::string ErrnoText(int err) { return std::strerror(err); }

class PosixRandomAccessFile final : public RandomAccessFile {
 public:
  PosixRandomAccessFile(std::string name, int fd, uint64_t size)
      : name_(std::move(name)), fd_(fd), size_(size) {}
  ~PosixRandomAccessFile() override { ::close(fd_); }

  Status Read(uint64_t offset, size_t n, char* dst) const override {
    return sysio::PreadFully(fd_, name_, offset, n, dst);
  }
  uint64_t Size() const override { return size_; }
  const std::string& name() const override { return name_; }

 private:
  std::string name_;
  int fd_;
  uint64_t size_;
};

class MemoryFile final : public RandomAccessFile {
 public:
  MemoryFile(std::string name, std::string contents)
      : name_(std::move(name)), data_(std::move(contents)) {}
  Status Read(uint64_t offset, size_t n, char* dst) const override {
    if (offset > data_.size() || n > data_.size() - offset) {
      return Status::IOError(name_ + ": short read at offset " + std::to_string(offset) +
                             " (wanted " + std::to_string(n) + " bytes, size " +
                             std::to_string(data_.size()) + ")");
    }
    std::memcpy(dst, data_.data() + offset, n);
    return Status::OK();
  }
  uint64_t Size() const override { return data_.size(); }
  const std::string& name() const override { return name_; }

 private:
  std::string name_;
  std::string data_;
};

std::string DirName(const std::string& path) {
  auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

Status SyncDir(const std::string& dir) {
  int fd = sysio::Open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Status::IOError(dir + ": open directory: " + ErrnoText(errno));
  int rc = sysio::Fsync(fd, dir.c_str());
  int err = errno;
  ::close(fd);
  if (rc != 0) return Status::IOError(dir + ": fsync directory: " + ErrnoText(err));
  return Status::OK();
}

}  // namespace

Status OpenRandomAccessFile(const std::string& path, std::unique_ptr<RandomAccessFile>* out) {
  // Paths come from users (a tokenizer model, a checkpoint to resume): a FIFO is refused, not
  // waited on.
  int fd = -1;
  struct stat st;
  SLUICE_RETURN_IF_ERROR(sysio::OpenRegular(path, O_RDONLY | O_CLOEXEC, &fd, &st));
  *out = std::make_unique<PosixRandomAccessFile>(path, fd, static_cast<uint64_t>(st.st_size));
  return Status::OK();
}

std::unique_ptr<RandomAccessFile> NewMemoryFile(std::string name, std::string contents) {
  return std::make_unique<MemoryFile>(std::move(name), std::move(contents));
}

WritableFile::~WritableFile() {
  if (fd_ >= 0) ::close(fd_);
}

Status WritableFile::Create(const std::string& path, std::unique_ptr<WritableFile>* out) {
  int fd = sysio::Open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::IOError(path + ": create: " + ErrnoText(errno));
  out->reset(new WritableFile(path, fd, 0));
  return Status::OK();
}

Status WritableFile::OpenForAppend(const std::string& path, uint64_t keep_bytes,
                                   std::unique_ptr<WritableFile>* out) {
  if (keep_bytes == 0) return Create(path, out);
  int fd = sysio::Open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return Status::IOError(path + ": open for append: " + ErrnoText(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return Status::IOError(path + ": stat: " + ErrnoText(err));
  }
  if (static_cast<uint64_t>(st.st_size) < keep_bytes) {
    ::close(fd);
    // Cutting "back" would extend it with zeros: bytes a journal vouched for are lost.
    return Status::Corruption(path + ": holds " + std::to_string(st.st_size) +
                              " bytes, fewer than the " + std::to_string(keep_bytes) +
                              " its journal vouches for");
  }
  // Positioned at keep_bytes by the truncate and the lseek, not O_APPEND: what follows a torn
  // tail is overwritten.
  if (sysio::Ftruncate(fd, static_cast<off_t>(keep_bytes), path.c_str()) != 0 ||
      ::lseek(fd, static_cast<off_t>(keep_bytes), SEEK_SET) < 0) {
    const int err = errno;
    ::close(fd);
    return Status::IOError(path + ": truncate to " + std::to_string(keep_bytes) +
                           " bytes: " + ErrnoText(err));
  }
  out->reset(new WritableFile(path, fd, keep_bytes));
  return Status::OK();
}

Status WritableFile::Append(std::string_view data) {
  size_ += data.size();
  if (buf_.size() + data.size() < (1u << 20)) {
    buf_.append(data);
    return Status::OK();
  }
  // Large appends (whole compressed blocks) skip the buffer.
  SLUICE_RETURN_IF_ERROR(Flush());
  return WriteAll(data);
}

Status WritableFile::WriteAll(std::string_view data) {
  const char* p = data.data();
  size_t left = data.size();
  while (left > 0) {
    ssize_t w = sysio::Write(fd_, p, left, path_.c_str());
    if (w < 0) {
      if (errno == EINTR) continue;
      return Status::IOError(path_ + ": write of " + std::to_string(left) + " bytes at offset " +
                             std::to_string(written_) + ": " + ErrnoText(errno));
    }
    p += w;
    left -= static_cast<size_t>(w);
    written_ += static_cast<uint64_t>(w);
  }
  return Status::OK();
}

Status WritableFile::Flush() {
  SLUICE_RETURN_IF_ERROR(WriteAll(buf_));
  buf_.clear();
  return Status::OK();
}

Status WritableFile::Sync() {
  SLUICE_RETURN_IF_ERROR(Flush());
  if (sysio::Fsync(fd_, path_.c_str()) != 0) {
    return Status::IOError(path_ + ": fsync at " + std::to_string(written_) +
                           " bytes: " + ErrnoText(errno));
  }
  return Status::OK();
}

Status WritableFile::Close() {
  if (fd_ < 0) return Status::OK();
  Status s = Sync();
  if (::close(fd_) != 0 && s.ok()) s = Status::IOError(path_ + ": close: " + ErrnoText(errno));
  fd_ = -1;
  return s;
}

LineReader::~LineReader() { ::close(fd_); }

Status LineReader::Open(const std::string& path, std::unique_ptr<LineReader>* out) {
  // An input manifest or a journal: a FIFO is refused, not waited on.
  int fd = -1;
  SLUICE_RETURN_IF_ERROR(sysio::OpenRegular(path, O_RDONLY | O_CLOEXEC, &fd));
  out->reset(new LineReader(path, fd));
  return Status::OK();
}

bool LineReader::Next(std::string* line, Status* status) {
  while (true) {
    // Only bytes not searched yet: a line of many chunks would otherwise be searched again from
    // its start after every chunk, quadratic in its length (52 s for a 200 MB line).
    const size_t from = std::max(pos_, scanned_);
    const size_t nl = buf_.find('\n', from);
    bytes_searched_ += (nl == std::string::npos ? buf_.size() : nl + 1) - from;
    if (nl != std::string::npos) {
      line->assign(buf_, pos_, nl - pos_);
      pos_ = scanned_ = nl + 1;
      return true;
    }
    scanned_ = buf_.size();
    if (eof_) {
      if (pos_ == buf_.size()) return false;
      line->assign(buf_, pos_);
      pos_ = scanned_ = buf_.size();
      return true;
    }
    buf_.erase(0, pos_);
    scanned_ -= pos_;
    pos_ = 0;
    const size_t have = buf_.size();
    constexpr size_t kChunk = 1 << 16;
    buf_.resize(have + kChunk);
    ssize_t r;
    do {
      r = sysio::Read(fd_, buf_.data() + have, kChunk, path_.c_str());
    } while (r < 0 && errno == EINTR);
    if (r < 0) {
      *status =
          Status::IOError(path_ + ": read of " + std::to_string(kChunk) + " bytes at offset " +
                          std::to_string(offset_) + ": " + ErrnoText(errno));
      buf_.resize(have);
      return false;
    }
    buf_.resize(have + static_cast<size_t>(r));
    offset_ += static_cast<uint64_t>(r);
    eof_ = r == 0;
  }
}

Status RenameDurable(const std::string& from, const std::string& to) {
  if (sysio::Rename(from.c_str(), to.c_str()) != 0) {
    return Status::IOError("rename " + from + " -> " + to + ": " + ErrnoText(errno));
  }
  return SyncDir(DirName(to));
}

Status WriteFileAtomic(const std::string& path, std::string_view contents) {
  const std::string tmp = path + ".tmp";
  std::unique_ptr<WritableFile> f;
  SLUICE_RETURN_IF_ERROR(WritableFile::Create(tmp, &f));
  Status s = f->Append(contents);
  if (s.ok()) s = f->Close();
  if (!s.ok()) {
    // No debris from a full disk; a failed rename or directory fsync keeps its file, which a
    // rerun overwrites.
    ::unlink(tmp.c_str());
    return s;
  }
  return RenameDurable(tmp, path);
}

Status ReadFileToString(const std::string& path, std::string* out) {
  std::unique_ptr<RandomAccessFile> f;
  SLUICE_RETURN_IF_ERROR(OpenRandomAccessFile(path, &f));
  out->resize(f->Size());
  return f->Read(0, out->size(), out->data());
}

Status LinkOrCopyFile(const std::string& from, const std::string& to) {
  std::error_code ec;
  std::filesystem::remove(to, ec);
  if (sysio::Link(from.c_str(), to.c_str()) == 0) return SyncDir(DirName(to));
  const int err = errno;
  if (err != EXDEV && err != EPERM && err != EMLINK && err != ENOTSUP) {
    return Status::IOError("link " + from + " -> " + to + ": " + ErrnoText(err));
  }
  // Streamed in chunks: shards are large.
  std::unique_ptr<RandomAccessFile> in;
  SLUICE_RETURN_IF_ERROR(OpenRandomAccessFile(from, &in));
  const std::string tmp = to + ".tmp";
  std::unique_ptr<WritableFile> out;
  SLUICE_RETURN_IF_ERROR(WritableFile::Create(tmp, &out));
  std::string chunk;
  for (uint64_t at = 0; at < in->Size();) {
    chunk.resize(static_cast<size_t>(std::min<uint64_t>(in->Size() - at, 4 << 20)));
    SLUICE_RETURN_IF_ERROR(in->Read(at, chunk.size(), chunk.data()));
    SLUICE_RETURN_IF_ERROR(out->Append(chunk));
    at += chunk.size();
  }
  SLUICE_RETURN_IF_ERROR(out->Close());
  return RenameDurable(tmp, to);
}

}  // namespace sluice
