#include "loader/token_ids.h"

#include <limits>
#include <string>

#include "shards/fields.h"

namespace sluice::loader {

Status StoredTokenIds(const shards::FieldView& f, std::string_view where,
                      std::span<const int32_t>* ids, bool check_values) {
  std::span<const uint32_t> u;
  SLUICE_RETURN_IF_ERROR(shards::DecodeTokens(f, where, &u));
  constexpr uint32_t kMax = std::numeric_limits<int32_t>::max();
  for (size_t i = 0; check_values && i < u.size(); ++i) {
    if (u[i] > kMax)
      return Status::InvalidArgument(std::string(where) + ": token id " + std::to_string(u[i]) +
                                     " at position " + std::to_string(i) +
                                     " is 2^31 or more; batches hold int32 ids");
  }
  // Below 2^31 an id's u32 and int32 representations are the same bytes.
  *ids = {reinterpret_cast<const int32_t*>(u.data()), u.size()};
  return Status::OK();
}

}  // namespace sluice::loader
