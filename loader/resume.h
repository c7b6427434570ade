// ResumeState: where a rank stopped, as a few bytes of JSON: {"epoch": 3, "batches": 1200}.
// Loader::Start(state) continues with batch `batches` of that epoch: the plan is recomputed from
// the index (no payload is read, nothing is replayed) and the batches are the ones the
// uninterrupted run would have yielded, bit for bit, given the same dataset and options.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"

namespace sluice::loader {

struct ResumeState {
  uint64_t epoch = 0;
  uint64_t batches = 0;  // batches of the epoch the consumer has taken

  std::string ToJson() const;
  // InvalidArgument naming the problem for anything but an object with those two counts.
  static Status FromJson(const std::string& text, ResumeState* out);
  bool operator==(const ResumeState&) const = default;
};

}  // namespace sluice::loader
