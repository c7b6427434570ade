// Index columns of a synthetic dataset, for the sampler's tests (plan_test, elastic_test): no
// shard is written, the plan needs only the columns.
#pragma once

#include <cstdint>

#include "loader/plan.h"

namespace sluice::loader::testing {

// `shards` shards of 1 to 7 blocks of 1 to 10 records each, lengths 20 to 600 frames, all drawn
// from `seed`.
IndexColumns MakeSyntheticIndex(int shards, uint64_t seed);

}  // namespace sluice::loader::testing
