#include "shards/checksum.h"

#include <xxhash.h>

#include <cstdio>

namespace sluice::shards {

uint64_t Checksum(const void* data, size_t size) { return XXH3_64bits(data, size); }

struct StreamingChecksum::State {
  XXH3_state_t* s = nullptr;
};

StreamingChecksum::StreamingChecksum() : state_(new State) {
  state_->s = XXH3_createState();
  XXH3_64bits_reset(state_->s);
}

StreamingChecksum::~StreamingChecksum() { XXH3_freeState(state_->s); }

void StreamingChecksum::Update(const void* data, size_t size) {
  XXH3_64bits_update(state_->s, data, size);
}

uint64_t StreamingChecksum::Digest() const { return XXH3_64bits_digest(state_->s); }

std::string ChecksumHex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace sluice::shards
