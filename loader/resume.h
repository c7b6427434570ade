// ResumeState: where the ranks stopped, as a few bytes of JSON:
//   {"epoch": 3, "batches": 1200, "world": 8}
//   {"epoch": 3, "batches": 40, "world": 6, "earlier": [{"world": 8, "batches": 1200}]}
//
// Loader::Start(state) continues the epoch: the plan is recomputed from the index (no payload is
// read, nothing is replayed). At the world size that saved it, the batches are the ones the
// uninterrupted run would have yielded, bit for bit, given the same dataset and options.
//
// Elastic resume: at another world size the rest of the epoch is every record not yet consumed,
// exactly once, over the new ranks with equal counts. "Consumed" is the first `batches` batches
// of every one of `world` ranks (a checkpoint is taken at the same step on every rank). The plan
// being a pure function, the consumed records are recomputed from (epoch, world, batches) and are
// not stored; a chain of changes (8 -> 6 -> 7 ranks) keeps one WorldSegment per finished stretch,
// oldest first, each planned over what the stretches before it left (plan.h, "Elastic resume").
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "../base/status.h"

namespace sluice::loader {

// A stretch of an epoch run at `world` ranks, each of which took `batches` batches.
struct WorldSegment {
  int world = 1;
  uint64_t batches = 0;
  bool operator==(const WorldSegment&) const = default;
};

struct ResumeState {
  uint64_t epoch = 0;
  uint64_t batches = 0;  // batches of the epoch each rank has taken (in the current stretch)
  int world = 0;         // ranks that took them; 0: not recorded (a state written before
                         // elastic resume, or made by hand): the resuming loader's own world
  std::vector<WorldSegment> earlier;  // this epoch's earlier stretches at other world sizes

  // Bounds the state's size (about 30 bytes a segment): a longer chain is refused.
  static constexpr size_t kMaxSegments = 64;

  // "world" and "earlier" are written only when set (world > 0, a non-empty history).
  std::string ToJson() const;
  // InvalidArgument naming the problem for anything but an object with unsigned "epoch" and
  // "batches", an optional "world" >= 1 and an optional "earlier" list of {"world", "batches"}
  // (at most kMaxSegments). Old states ({"epoch", "batches"} alone) parse with world 0.
  static Status FromJson(const std::string& text, ResumeState* out);
  bool operator==(const ResumeState&) const = default;
};

}  // namespace sluice::loader
