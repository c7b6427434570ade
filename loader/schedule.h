// ReadSchedule: the blocks one rank reads for the rest of an epoch, in order, and which rows of
// which batches each read fills. A block is read when the earliest batch that needs it is being
// filled, for the rows of the batches up to open_batches ahead; the pipeline's tokens are these
// read steps.
//
// It also bounds the batch pool: a batch is opened (given pool memory) when the read stage
// reaches its first block and handed to the consumer once it and every batch before it are
// complete. With at most `lag` steps between the read stage and the collate stage, the batches
// open at once never exceed max_open_batches, so a pool of max_open_batches + ready queue +
// consumer's batches can never run dry: the read stage never waits on the consumer in a cycle.
#pragma once

#include <cstdint>
#include <vector>

#include "loader/plan.h"

namespace sluice::loader {

struct ReadItem {
  uint64_t record = 0;  // global record id
  uint32_t batch = 0;   // index into EpochPlan::batches
  uint32_t row = 0;     // row within that batch
};

// ReadStep::block of a step that reads nothing: it only lets earlier steps leave the pipeline.
inline constexpr uint32_t kBarrierBlock = 0xffffffffu;

struct ReadStep {
  uint32_t block = 0;       // global block (IndexColumns numbering), or kBarrierBlock
  uint32_t first_item = 0;  // items [first_item, first_item + num_items) of ReadSchedule::items
  uint32_t num_items = 0;
};

struct ReadSchedule {
  uint64_t start_batch = 0;  // batches before it were consumed before a resume
  std::vector<ReadStep> steps;
  std::vector<ReadItem> items;
  size_t max_open_batches = 0;  // see above, for the given lag
  uint64_t rereads = 0;         // steps that read a block a second time (open_batches)
  uint64_t barriers = 0;        // steps that read nothing (open_batches)
};

// Steps for batches [start_batch, plan.batches.size()). A step serves the rows of batches at
// most `open_batches` ahead of the batch that needs the block first (0 = all: each block is read
// once); rows further ahead get the block read again later, and barrier steps wait for earlier
// batches to leave, so that at most open_batches batches are ever being filled (max_open_batches
// <= open_batches): the batch pool is then a function of the options alone.
void MakeReadSchedule(const IndexColumns& index, const EpochPlan& plan, uint64_t start_batch,
                      int lag, uint32_t open_batches, ReadSchedule* out);

}  // namespace sluice::loader
