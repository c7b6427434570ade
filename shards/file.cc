#include "shards/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "shards/fd_cache.h"

namespace sluice::shards {
namespace {

std::string ErrnoText(int err) { return std::strerror(err); }

class PosixRandomAccessFile final : public RandomAccessFile {
 public:
  PosixRandomAccessFile(std::string name, int fd, uint64_t size)
      : name_(std::move(name)), fd_(fd), size_(size) {}
  ~PosixRandomAccessFile() override { ::close(fd_); }

  Status Read(uint64_t offset, size_t n, char* dst) const override {
    return PreadFully(fd_, name_, offset, n, dst);
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
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Status::IOError(dir + ": open directory: " + ErrnoText(errno));
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) return Status::IOError(dir + ": fsync directory: " + ErrnoText(err));
  return Status::OK();
}

}  // namespace

Status OpenRandomAccessFile(const std::string& path, std::unique_ptr<RandomAccessFile>* out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return Status::NotFound(path + ": no such file");
    return Status::IOError(path + ": open: " + ErrnoText(errno));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return Status::IOError(path + ": stat: " + ErrnoText(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::IOError(path + ": not a regular file");
  }
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
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::IOError(path + ": create: " + ErrnoText(errno));
  out->reset(new WritableFile(path, fd));
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
    ssize_t w = ::write(fd_, p, left);
    if (w < 0) {
      if (errno == EINTR) continue;
      return Status::IOError(path_ + ": write: " + ErrnoText(errno));
    }
    p += w;
    left -= static_cast<size_t>(w);
  }
  return Status::OK();
}

Status WritableFile::Flush() {
  SLUICE_RETURN_IF_ERROR(WriteAll(buf_));
  buf_.clear();
  return Status::OK();
}

Status WritableFile::Close() {
  if (fd_ < 0) return Status::OK();
  Status s = Flush();
  if (s.ok() && ::fsync(fd_) != 0) s = Status::IOError(path_ + ": fsync: " + ErrnoText(errno));
  if (::close(fd_) != 0 && s.ok()) s = Status::IOError(path_ + ": close: " + ErrnoText(errno));
  fd_ = -1;
  return s;
}

Status RenameDurable(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) {
    return Status::IOError("rename " + from + " -> " + to + ": " + ErrnoText(errno));
  }
  return SyncDir(DirName(to));
}

Status WriteFileAtomic(const std::string& path, std::string_view contents) {
  const std::string tmp = path + ".tmp";
  std::unique_ptr<WritableFile> f;
  SLUICE_RETURN_IF_ERROR(WritableFile::Create(tmp, &f));
  SLUICE_RETURN_IF_ERROR(f->Append(contents));
  SLUICE_RETURN_IF_ERROR(f->Close());
  return RenameDurable(tmp, path);
}

Status ReadFileToString(const std::string& path, std::string* out) {
  std::unique_ptr<RandomAccessFile> f;
  SLUICE_RETURN_IF_ERROR(OpenRandomAccessFile(path, &f));
  out->resize(f->Size());
  return f->Read(0, out->size(), out->data());
}

}  // namespace sluice::shards
