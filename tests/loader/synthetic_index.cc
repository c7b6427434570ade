#include "synthetic_index.h"

#include "base/random.h"

namespace sluice::loader::testing {

IndexColumns MakeSyntheticIndex(int shards, uint64_t seed) {
  IndexColumns ix;
  Rng rng(seed);
  ix.shard_first_record.push_back(0);
  ix.block_first_record.push_back(0);
  for (int s = 0; s < shards; ++s) {
    const int blocks = 1 + static_cast<int>(rng.UniformInt(0, 6));
    for (int b = 0; b < blocks; ++b) {
      const int per_block = 1 + static_cast<int>(rng.UniformInt(0, 9));
      for (int k = 0; k < per_block; ++k) {
        ix.length.push_back(20 + rng.UniformInt(0, 580));
        ix.duration.push_back(ix.length.back() * 160);
        ix.block_of.push_back(static_cast<uint32_t>(ix.block_shard.size()));
      }
      ix.block_shard.push_back(s);
      ix.block_local.push_back(b);
      ix.block_first_record.push_back(ix.length.size());
    }
    ix.shard_first_record.push_back(ix.length.size());
  }
  return ix;
}

}  // namespace sluice::loader::testing
