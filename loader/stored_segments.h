// Segments of stored recordings (shardify audio --segments stored; docs/formats/shard.md, "Stored
// recordings"; docs/loader.md, "Stored recordings"). The planner sees the segment records only: a
// chunk record holds audio, not a sample. The decode stage reads the blocks of the chunks a
// segment covers, and only those, and cuts the segment's exact samples from them.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "loader/feature_extractor.h"
#include "loader/plan.h"
#include "loader/sources.h"
#include "shards/record.h"
#include "shards/shard_reader.h"

namespace sluice::loader {

// Leaves the chunk records of stored-segment sources out of the epochs (index->selected; filters
// then choose among the segments). Nothing for datasets without stored segments. Corruption
// naming the shard and record for a record of such a dataset whose aux bytes are no ref.
Status DeselectChunks(const Sources& sources, IndexColumns* index);

// Segment record `local` of `shard`: its samples, read from its chunks' blocks (the block the
// scratch decoded last is not read again), as a kAudioPcm16 field added to *record (its samples
// in s->segment_pcm). *blocks_read counts the blocks read. Corruption naming the shard, the
// segment and the chunk for a ref that does not resolve, a chunk whose samples are not its
// duration or a damaged block; an I/O error as the read gave it.
Status AddSegmentAudio(const shards::ShardReader& shard, size_t local, DecodeScratch* s,
                       shards::RecordView* record, uint64_t* blocks_read);

}  // namespace sluice::loader
