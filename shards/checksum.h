// XXH3-64 (libxxhash), the checksum of every block, index, footer and of whole
// shard files in manifest.json. Seed 0 everywhere.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace sluice::shards {

uint64_t Checksum(const void* data, size_t size);

// Incremental form, for whole-file checksums computed while writing.
class StreamingChecksum {
 public:
  StreamingChecksum();
  ~StreamingChecksum();
  StreamingChecksum(const StreamingChecksum&) = delete;
  StreamingChecksum& operator=(const StreamingChecksum&) = delete;

  void Update(const void* data, size_t size);
  uint64_t Digest() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// 16 lowercase hex digits, the form manifest.json stores.
std::string ChecksumHex(uint64_t v);

}  // namespace sluice::shards
