// libsndfile virtual I/O over memory: a read-only view and a growing byte vector. Internal to
// features/ (audio.cc and flac.cc); not part of the public API.
#pragma once

#include <sndfile.h>

#include <cstdint>
#include <string>
#include <vector>

namespace sluice::features::internal {

// Read-only view of an encoded file in memory.
struct MemoryReader {
  const uint8_t* data = nullptr;
  sf_count_t size = 0;
  sf_count_t pos = 0;
};

// Write target that grows; libsndfile seeks back (FLAC STREAMINFO, WAV sizes) and rewrites.
struct VectorWriter {
  std::vector<uint8_t>* bytes = nullptr;
  sf_count_t pos = 0;
};

// Callback tables whose user_data is a MemoryReader* / VectorWriter*.
SF_VIRTUAL_IO* MemoryReaderIo();
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
template <class Open>
SNDFILE* OpenSndfile(Open&& open, OpenFailure* failure) {
  return OpenSndfileLocked([](void* f) { return (*static_cast<Open*>(f))(); }, &open, failure);
}

}  // namespace sluice::features::internal
