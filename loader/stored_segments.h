// Segments of stored recordings (shardify audio --segments stored; docs/formats/shard.md, "Stored
// recordings"; docs/loader.md, "Stored recordings"). The planner sees the segment records only: a
// chunk record holds audio, not a sample. The decode stage reads the blocks of the chunks a
// segment covers, and only those, and cuts the segment's exact samples from them.
#pragma once

#include <cstdint>
#include <functional>

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

// window_seconds > 0 (docs/loader.md, "Stored recordings"): the epochs hold one row per stored
// recording instead of its segments. Each recording's first chunk record stands for it, its
// duration and length columns set to the window's (window_samples, or the whole recording when
// shorter; length_of gives the plan length). InvalidArgument naming the directory for a source
// whose segments were cut at ingest.
Status SelectWindows(const Sources& sources, uint64_t window_samples,
                     const std::function<uint64_t(const shards::RecordEntry&)>& length_of,
                     IndexColumns* index);

// window_seconds at the dataset's rate, in samples (at least 1); 0 when windows are off.
uint64_t WindowSamples(double window_seconds, int sample_rate);

// The window's first sample in a recording of `total` samples: uniform in [0, total - window],
// keyed by (seed, epoch, record_id of the recording's first chunk); 0 when it does not fit.
uint64_t WindowStart(uint64_t seed, uint64_t epoch, uint64_t record_id, uint64_t total,
                     uint64_t window);

// The window of the recording whose first chunk is record `local` of `shard` (global id
// record_id): *record becomes its samples (kAudioPcm16), the text of the segments it holds whole,
// in their order, joined by one space (kText; a segment only partly inside gives nothing), and
// their ids when they store some (kTokens); *entry the first chunk's entry with the window's
// duration and token count. Views point into *s. *blocks_read counts the blocks read.
Status MakeWindow(const shards::ShardReader& shard, size_t local, uint64_t record_id, uint64_t seed,
                  uint64_t epoch, uint64_t window_samples, DecodeScratch* s,
                  shards::RecordView* record, shards::RecordEntry* entry, uint64_t* blocks_read);

}  // namespace sluice::loader
