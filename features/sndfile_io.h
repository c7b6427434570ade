// libsndfile virtual I/O over memory: a read-only view and a growing byte vector. Internal to
// features/ (audio.cc and flac.cc); not part of the public API.
#pragma once

#include <sndfile.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "base/status.h"

namespace sluice::features::internal {

// Read-only view of an encoded file in memory.
struct MemoryReader {
  const uint8_t* data = nullptr;
  sf_count_t size = 0;
  sf_count_t pos = 0;
};

// An open file read through base/sysio (the fault seam) on demand: libsndfile sees only the bytes
// it asks for, so a segment of a long file costs the header plus the segment, not the whole file.
// A read error is kept in `error` (the callback reports 0 bytes): the caller returns it in place
// of whatever libsndfile made of the shortfall, so a failing disk stops shardify rather than
// being taken for a truncated file. Reads are served from a window of `buffer` (read ahead in
// kWindow pieces), so libsndfile's many small header reads cost one system call.
struct FdReader {
  static constexpr sf_count_t kWindow = 1 << 16;
  int fd = -1;
  const std::string* path = nullptr;  // for error messages
  sf_count_t size = 0;
  sf_count_t pos = 0;
  std::vector<char>* buffer = nullptr;  // scratch, reused across files
  sf_count_t buffer_at = 0;             // file offset of buffer's first byte
  sf_count_t buffer_len = 0;            // valid bytes in buffer
  uint64_t bytes_read = 0;              // from the file, for tests of what a segment costs
  Status error;

  // Copies n bytes at offset into dst; false (with `error` set or past the end) otherwise.
  bool ReadAt(sf_count_t offset, sf_count_t n, void* dst);
};

// Write target that grows; libsndfile seeks back (FLAC STREAMINFO, WAV sizes) and rewrites.
struct VectorWriter {
  std::vector<uint8_t>* bytes = nullptr;
  sf_count_t pos = 0;
};

// Callback tables whose user_data is a MemoryReader* / VectorWriter*.
SF_VIRTUAL_IO* MemoryReaderIo();
SF_VIRTUAL_IO* FdReaderIo();
SF_VIRTUAL_IO* VectorWriterIo();

// "name: what: libsndfile's reason" for a failed call on `sf`.
std::string SndfileError(const std::string& name, const char* what, SNDFILE* sf);

// Why an open failed: libsndfile's error number and text.
struct OpenFailure {
  int code = SF_ERR_NO_ERROR;
  std::string reason;
};
// Runs `open` (an sf_open* call) under one process-wide lock, and on failure reads its error
// under the same lock. libsndfile keeps a failed open's error in a single global that another
// thread's failing open overwrites, so without the lock a reject reason could name another file's
// problem, and shardify's rejects.jsonl would change with the thread count.
SNDFILE* OpenSndfileLocked(SNDFILE* (*open)(void*), void* arg, OpenFailure* failure);
// That lock, for tests that hold it.
std::mutex& OpenLock();
template <class Open>
SNDFILE* OpenSndfile(Open&& open, OpenFailure* failure) {
  return OpenSndfileLocked([](void* f) { return (*static_cast<Open*>(f))(); }, &open, failure);
}

}  // namespace sluice::features::internal
