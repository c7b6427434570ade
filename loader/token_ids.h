// The token ids a record stores, as the batches hold them. On disk ids are u32
// (docs/formats/shard.md, kTokens); batches and tokenizers use int32, so an id of 2^31 or more
// would turn negative: it is refused instead, naming the id and its position.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "base/status.h"
#include "shards/record.h"

namespace sluice::loader {

// The ids of a kTokens field as int32, without copying. Corruption (naming `where`) for a size
// that is not a whole number of ids; InvalidArgument for an id >= 2^31, which no int32 batch can
// hold: a dataset made with a larger vocabulary than the loader supports, not a damaged record.
// check_values false skips that scan, for a caller that already checked this record's ids.
Status StoredTokenIds(const shards::FieldView& f, std::string_view where,
                      std::span<const int32_t>* ids, bool check_values = true);

}  // namespace sluice::loader
