#include "loader/stored_segments.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "features/flac.h"
#include "shards/recording.h"

namespace sluice::loader {

Status DeselectChunks(const Sources& sources, IndexColumns* index) {
  size_t g = 0;  // global shard
  for (size_t src = 0; src < sources.size(); ++src) {
    const shards::Dataset& ds = sources.source(src);
    const size_t shards = ds.manifest().shards.size();
    if (!ds.manifest().stored_segments()) {
      g += shards;
      continue;
    }
    if (index->selected.empty()) index->selected.assign(index->num_records(), 1);
    if (index->shard_stored.empty()) index->shard_stored.assign(sources.num_shards(), 0);
    for (size_t k = 0; k < shards; ++k, ++g) {
      index->shard_stored[g] = 1;
      const shards::ShardReader& shard = sources.shard(g);
      const uint64_t first = index->shard_first_record[g];
      for (size_t i = 0; i < shard.num_records(); ++i) {
        std::string_view aux = shard.aux(i);
        shards::RecordingRef ref;
        Status st = ref.DecodeFrom(&aux);
        if (!st.ok() || !aux.empty())
          return Status::Corruption(
              shard.name() + ": record " + std::to_string(i) + " '" + std::string(shard.key(i)) +
              "': " +
              (st.ok() ? std::string("aux bytes longer than a recording ref") : st.message()) +
              " (the manifest says its segments are stored)");
        if (ref.kind == shards::RefKind::kChunk) index->selected[first + i] = 0;
      }
    }
  }
  return Status::OK();
}

Status AddSegmentAudio(const shards::ShardReader& shard, size_t local, DecodeScratch* s,
                       shards::RecordView* record, uint64_t* blocks_read) {
  shards::RecordingRef ref;
  shards::SegmentSpan span;
  SLUICE_RETURN_IF_ERROR(shards::ReadRecordingRef(shard, local, &ref, &span));
  if (ref.kind != shards::RefKind::kSegment)
    return Status::Corruption(shard.name() + ": record " + std::to_string(local) +
                              " is a chunk of a stored recording, not a segment");
  s->segment_pcm.resize(span.samples);
  uint64_t filled = 0, skip = span.offset;
  for (uint32_t c = span.first_chunk; c < span.end_chunk && filled < span.samples; ++c) {
    const uint32_t b = shard.record(c).block;
    if (s->chunk_shard != &shard || s->chunk_block != b) {
      s->chunk_shard = nullptr;  // until the block is whole
      SLUICE_RETURN_IF_ERROR(shard.ReadCompressedBlock(b, &s->chunk_compressed));
      ++*blocks_read;
      SLUICE_RETURN_IF_ERROR(shard.DecodeBlock(b, s->chunk_compressed.view(), &s->chunk_raw));
      s->chunk_shard = &shard;
      s->chunk_block = b;
    }
    const std::string where = shard.Where(b) + ": chunk '" + std::string(shard.key(c)) +
                              "' of segment '" + std::string(shard.key(local)) + "'";
    const std::string_view payload = shard.RecordPayload(c, s->chunk_raw);
    shards::RecordView rv;
    Status st = shards::ParseRecord(payload.data(), payload.size(), where, &rv);
    if (!st.ok()) return Status::Corruption(st.message());
    const int16_t* pcm = nullptr;
    size_t n = 0;
    if (const shards::FieldView* f = rv.Find(shards::FieldType::kAudioPcm16)) {
      pcm = reinterpret_cast<const int16_t*>(f->data);
      n = f->size / 2;
    } else if (const shards::FieldView* f = rv.Find(shards::FieldType::kAudioFlac)) {
      int rate = 0;
      SLUICE_RETURN_IF_ERROR(features::DecodeFlac(reinterpret_cast<const uint8_t*>(f->data),
                                                  f->size, where, &s->chunk_pcm, &rate));
      pcm = s->chunk_pcm.data();
      n = s->chunk_pcm.size();
    } else {
      return Status::Corruption(where + ": no audio field");
    }
    if (n != shard.record(c).duration)
      return Status::Corruption(where + ": " + std::to_string(n) + " samples, the index says " +
                                std::to_string(shard.record(c).duration));
    const uint64_t take = std::min<uint64_t>(n - skip, span.samples - filled);
    std::memcpy(s->segment_pcm.data() + filled, pcm + skip, take * sizeof(int16_t));
    filled += take;
    skip = 0;
  }
  if (record->num_fields >= shards::kMaxFields || record->Find(shards::FieldType::kAudioPcm16) ||
      record->Find(shards::FieldType::kAudioFlac))
    return Status::Corruption(shard.name() + ": segment '" + std::string(shard.key(local)) +
                              "' holds audio of its own");
  record->fields[record->num_fields++] = {shards::FieldType::kAudioPcm16,
                                          reinterpret_cast<const char*>(s->segment_pcm.data()),
                                          static_cast<uint32_t>(span.samples * sizeof(int16_t))};
  return Status::OK();
}

}  // namespace sluice::loader
