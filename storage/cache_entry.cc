#include "storage/cache_entry.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>

#include "base/sysio.h"
#include "shards/checksum.h"
#include "shards/coding.h"

namespace sluice::storage {
namespace {

// Reads or writes all of iov (pwritev/preadv may stop short); false on an error or end of file.
template <class Op>
bool AllOf(Op op, int fd, struct iovec* iov, int count, off_t offset, const std::string& path) {
  while (count > 0) {
    const ssize_t r = op(fd, iov, count, offset, path.c_str());
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    offset += r;
    size_t done = static_cast<size_t>(r);
    while (count > 0 && done >= iov->iov_len) {
      done -= iov->iov_len;
      ++iov;
      --count;
    }
    if (count > 0) {
      iov->iov_base = static_cast<char*>(iov->iov_base) + done;
      iov->iov_len -= done;
    }
  }
  return true;
}

bool ParseDecimal(const char* begin, const char* end, uint64_t* v) {
  if (begin == end || (*begin == '0' && end - begin > 1)) return false;  // one spelling per value
  const auto [p, ec] = std::from_chars(begin, end, *v);
  return ec == std::errc() && p == end;
}

}  // namespace

std::string CacheEntryName(uint64_t offset, uint64_t n) {
  return std::to_string(offset) + "+" + std::to_string(n);
}

bool ParseCacheEntryName(const std::string& name, uint64_t* offset, uint64_t* n) {
  const size_t plus = name.find('+');
  if (plus == std::string::npos) return false;
  const char* s = name.data();
  return ParseDecimal(s, s + plus, offset) && ParseDecimal(s + plus + 1, s + name.size(), n);
}

bool IsCacheTempName(const std::string& name) { return name.find(".tmp.") != std::string::npos; }

EntryRead ReadCacheEntry(const std::string& path, uint64_t offset, uint64_t n, uint64_t xxh3,
                         char* dst, std::string* why) {
  // Only a regular file: a FIFO left under an entry's name would block open() (and the read
  // that needs this block) forever; as a bad entry it is removed and the block fetched again.
  int fd = -1;
  struct stat st;
  const Status open = sysio::OpenRegular(path, O_RDONLY | O_CLOEXEC, &fd, &st);
  if (!open.ok()) {
    if (open.IsNotFound()) return EntryRead::kMissing;
    *why = open.message();
    return EntryRead::kBad;
  }
  char header[kCacheEntryHeaderSize], trailer[kCacheEntryTrailerSize];
  EntryRead result = EntryRead::kBad;
  if (static_cast<uint64_t>(st.st_size) != n + kCacheEntryOverhead) {
    *why = std::to_string(st.st_size) + " bytes, an entry of " + std::to_string(n) + " holds " +
           std::to_string(n + kCacheEntryOverhead);
  } else {
    struct iovec iov[3] = {{header, sizeof header}, {dst, n}, {trailer, sizeof trailer}};
    if (!AllOf(sysio::Preadv, fd, iov, 3, 0, path)) {
      *why = std::string("read: ") + std::strerror(errno);
    } else if (std::memcmp(header, kCacheEntryMagic, sizeof kCacheEntryMagic) != 0) {
      *why = "bad magic";
    } else if (shards::DecodeFixed64(header + 8) != offset ||
               shards::DecodeFixed64(header + 16) != n) {
      *why = "header names another range";
    } else if (const uint64_t sum = shards::Checksum(dst, n);
               shards::DecodeFixed64(trailer) != sum) {
      *why = "checksum mismatch";
    } else if (sum != xxh3) {
      *why = "checksum " + shards::ChecksumHex(sum) + ", the shard's index says " +
             shards::ChecksumHex(xxh3);
    } else {
      result = EntryRead::kHit;
    }
  }
  ::close(fd);
  return result;
}

Status WriteCacheEntry(const std::string& path, uint64_t offset, uint64_t n, const char* data) {
  static std::atomic<uint64_t> sequence{0};
  const std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." +
                          std::to_string(sequence.fetch_add(1, std::memory_order_relaxed));
  const int fd = sysio::Open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return Status::IOError(tmp + ": create: " + std::strerror(errno));
  char header[kCacheEntryHeaderSize], trailer[kCacheEntryTrailerSize];
  std::memcpy(header, kCacheEntryMagic, sizeof kCacheEntryMagic);
  shards::EncodeFixed64(header + 8, offset);
  shards::EncodeFixed64(header + 16, n);
  shards::EncodeFixed64(trailer, shards::Checksum(data, n));
  struct iovec iov[3] = {
      {header, sizeof header}, {const_cast<char*>(data), n}, {trailer, sizeof trailer}};
  const bool written = AllOf(sysio::Pwritev, fd, iov, 3, 0, tmp);
  const int write_errno = errno;
  const bool closed = ::close(fd) == 0;
  if (!written || !closed) {
    ::unlink(tmp.c_str());
    return Status::IOError(tmp + ": write of " + std::to_string(n + kCacheEntryOverhead) +
                           " bytes: " + std::strerror(written ? errno : write_errno));
  }
  if (sysio::Rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return Status::IOError(tmp + ": rename to " + path + ": " + std::strerror(err));
  }
  return Status::OK();
}

}  // namespace sluice::storage
