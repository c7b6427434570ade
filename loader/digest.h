// BatchDigest: a hash over every batch's keys and bytes in order (XXH3-64), so determinism,
// resume and partition can be checked from outside (sluice-bench epoch --json "digest").
#pragma once

#include <cstdint>
#include <string>

#include "../loader/batch.h"
#include "../shards/checksum.h"

namespace sluice::loader {

class BatchDigest {
 public:
  // Shapes, keys, lengths, features, tokens and texts of the batch, in row order.
  void Add(const Batch& b);
  uint64_t value() const { return sum_.Digest(); }
  std::string hex() const { return shards::ChecksumHex(value()); }

 private:
  shards::StreamingChecksum sum_;
};

// The digest of one batch alone.
uint64_t DigestOf(const Batch& b);

}  // namespace sluice::loader
