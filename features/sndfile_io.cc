#include "features/sndfile_io.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <shared_mutex>

#include "base/sysio.h"

namespace sluice::features::internal {
namespace {

// Shared by both directions: the new position, clamped to [0, size]; libsndfile only seeks to
// places it has read or written, so clamping never hides a real request.
sf_count_t Seek(sf_count_t pos, sf_count_t size, sf_count_t offset, int whence) {
  sf_count_t target = offset;
  if (whence == SEEK_CUR) target = pos + offset;
  if (whence == SEEK_END) target = size + offset;
  return std::clamp<sf_count_t>(target, 0, size);
}

sf_count_t ReaderLength(void* user) { return static_cast<MemoryReader*>(user)->size; }
sf_count_t ReaderSeek(sf_count_t offset, int whence, void* user) {
  auto* r = static_cast<MemoryReader*>(user);
  r->pos = Seek(r->pos, r->size, offset, whence);
  return r->pos;
}
sf_count_t ReaderRead(void* dst, sf_count_t count, void* user) {
  auto* r = static_cast<MemoryReader*>(user);
  const sf_count_t n = std::clamp<sf_count_t>(count, 0, r->size - r->pos);
  if (n > 0) std::memcpy(dst, r->data + r->pos, static_cast<size_t>(n));
  r->pos += n;
  return n;
}
sf_count_t ReaderWrite(const void*, sf_count_t, void*) { return 0; }
sf_count_t ReaderTell(void* user) { return static_cast<MemoryReader*>(user)->pos; }

sf_count_t FdLength(void* user) { return static_cast<FdReader*>(user)->size; }
sf_count_t FdSeek(sf_count_t offset, int whence, void* user) {
  auto* r = static_cast<FdReader*>(user);
  r->pos = Seek(r->pos, r->size, offset, whence);
  return r->pos;
}
sf_count_t FdRead(void* dst, sf_count_t count, void* user) {
  auto* r = static_cast<FdReader*>(user);
  const sf_count_t n = std::clamp<sf_count_t>(count, 0, r->size - r->pos);
  if (n == 0 || !r->ReadAt(r->pos, n, dst)) return 0;
  r->pos += n;
  return n;
}
sf_count_t FdTell(void* user) { return static_cast<FdReader*>(user)->pos; }

sf_count_t WriterLength(void* user) {
  return static_cast<sf_count_t>(static_cast<VectorWriter*>(user)->bytes->size());
}
sf_count_t WriterSeek(sf_count_t offset, int whence, void* user) {
  auto* w = static_cast<VectorWriter*>(user);
  w->pos = Seek(w->pos, static_cast<sf_count_t>(w->bytes->size()), offset, whence);
  return w->pos;
}
sf_count_t WriterRead(void* dst, sf_count_t count, void* user) {
  auto* w = static_cast<VectorWriter*>(user);
  const auto size = static_cast<sf_count_t>(w->bytes->size());
  const sf_count_t n = std::clamp<sf_count_t>(count, 0, size - w->pos);
  if (n > 0) std::memcpy(dst, w->bytes->data() + w->pos, static_cast<size_t>(n));
  w->pos += n;
  return n;
}
sf_count_t WriterWrite(const void* src, sf_count_t count, void* user) {
  auto* w = static_cast<VectorWriter*>(user);
  if (count <= 0) return 0;
  const size_t end = static_cast<size_t>(w->pos + count);
  if (end > w->bytes->size()) w->bytes->resize(end);
  std::memcpy(w->bytes->data() + w->pos, src, static_cast<size_t>(count));
  w->pos += count;
  return count;
}
sf_count_t WriterTell(void* user) { return static_cast<VectorWriter*>(user)->pos; }

SF_VIRTUAL_IO g_reader_io = {ReaderLength, ReaderSeek, ReaderRead, ReaderWrite, ReaderTell};
SF_VIRTUAL_IO g_fd_io = {FdLength, FdSeek, FdRead, ReaderWrite, FdTell};
SF_VIRTUAL_IO g_writer_io = {WriterLength, WriterSeek, WriterRead, WriterWrite, WriterTell};

}  // namespace

SF_VIRTUAL_IO* MemoryReaderIo() { return &g_reader_io; }
SF_VIRTUAL_IO* FdReaderIo() { return &g_fd_io; }
SF_VIRTUAL_IO* VectorWriterIo() { return &g_writer_io; }

bool FdReader::ReadAt(sf_count_t offset, sf_count_t n, void* dst) {
  if (!error.ok() || offset < 0 || n < 0 || offset > size || n > size - offset) return false;
  auto* out = static_cast<char*>(dst);
  if (offset >= buffer_at && offset + n <= buffer_at + buffer_len) {
    std::memcpy(out, buffer->data() + (offset - buffer_at), static_cast<size_t>(n));
    return true;
  }
  if (n >= kWindow) {  // large reads (samples) go straight to the caller's memory
    error =
        sysio::PreadFully(fd, *path, static_cast<uint64_t>(offset), static_cast<size_t>(n), out);
    bytes_read += static_cast<uint64_t>(n);
    return error.ok();
  }
  const sf_count_t len = std::min(kWindow, size - offset);
  buffer->resize(static_cast<size_t>(kWindow));
  buffer_len = 0;
  error = sysio::PreadFully(fd, *path, static_cast<uint64_t>(offset), static_cast<size_t>(len),
                            buffer->data());
  if (!error.ok()) return false;
  bytes_read += static_cast<uint64_t>(len);
  buffer_at = offset;
  buffer_len = len;
  std::memcpy(out, buffer->data(), static_cast<size_t>(n));
  return true;
}

std::string SndfileError(const std::string& name, const char* what, SNDFILE* sf) {
  return name + ": " + what + ": " + sf_strerror(sf);
}

std::shared_mutex& OpenLock() {
  static std::shared_mutex mu;
  return mu;
}

SNDFILE* OpenSndfileLocked(SNDFILE* (*open)(void*), void* arg, OpenFailure* failure) {
  std::unique_lock<std::shared_mutex> lock(OpenLock());
  SNDFILE* sf = open(arg);
  if (sf == nullptr) {
    failure->code = sf_error(nullptr);
    failure->reason = sf_strerror(nullptr);
  }
  return sf;
}

}  // namespace sluice::features::internal
