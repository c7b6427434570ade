#include "comm/communicator.h"

#include <string>

namespace sluice::comm {

Status AgreeOnBatchCount(Communicator* comm, uint64_t batches, const char* what) {
  // max(count) and max(-count) = -min(count) in one all-reduce.
  int64_t v[2] = {static_cast<int64_t>(batches), -static_cast<int64_t>(batches)};
  SLUICE_RETURN_IF_ERROR(comm->AllReduceMaxHost(v, 2));
  const int64_t max = v[0], min = -v[1];
  if (min == max) return Status::OK();
  return Status::InvalidArgument(
      std::string(what) + ": ranks disagree on the batch count (" + std::to_string(min) +
      " to " + std::to_string(max) + " across " + std::to_string(comm->world()) +
      " ranks; this rank has " + std::to_string(batches) +
      "). HINT: every rank must use the same dataset, options, seed and world size, so the "
      "loader's partition gives each the same count");
}

}  // namespace sluice::comm
