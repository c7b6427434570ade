#include "loader/stored_segments.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "base/random.h"
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

namespace {

std::string RecordName(const shards::ShardReader& shard, size_t i) {
  return shard.name() + ": record " + std::to_string(i) + " '" + std::string(shard.key(i)) + "'";
}

// Decodes block b of `shard` into s->chunk_raw unless it is the block decoded last.
Status LoadChunkBlock(const shards::ShardReader& shard, uint32_t b, DecodeScratch* s,
                      uint64_t* blocks_read) {
  if (s->chunk_shard == &shard && s->chunk_block == b) return Status::OK();
  s->chunk_shard = nullptr;  // until the block is whole
  SLUICE_RETURN_IF_ERROR(shard.ReadCompressedBlock(b, &s->chunk_compressed));
  ++*blocks_read;
  SLUICE_RETURN_IF_ERROR(shard.DecodeBlock(b, s->chunk_compressed.view(), &s->chunk_raw));
  s->chunk_shard = &shard;
  s->chunk_block = b;
  return Status::OK();
}

// Samples [offset, offset + samples) counted from the start of chunk `first_chunk` into
// s->segment_pcm, read from the chunks' blocks; what() names the segment or window in errors. It
// and every other name are built on the error paths only: this runs once per record.
template <class What>
Status CutSamples(const shards::ShardReader& shard, uint32_t first_chunk, uint64_t offset,
                  uint64_t samples, const What& what, DecodeScratch* s, uint64_t* blocks_read) {
  s->segment_pcm.resize(samples);
  uint64_t filled = 0, skip = offset;
  for (uint32_t c = first_chunk; filled < samples; ++c) {
    if (c >= shard.num_records())
      return Status::Corruption(what() + ": its recording ends before its samples");
    if (skip >= shard.record(c).duration) {  // a chunk before the span: its block is not read
      skip -= shard.record(c).duration;
      continue;
    }
    const uint32_t b = shard.record(c).block;
    SLUICE_RETURN_IF_ERROR(LoadChunkBlock(shard, b, s, blocks_read));
    auto where = [&] {
      return shard.Where(b) + ": chunk '" + std::string(shard.key(c)) + "' of " + what();
    };
    const std::string_view payload = shard.RecordPayload(c, s->chunk_raw);
    shards::RecordView rv;
    Status st = shards::ParseRecord(payload.data(), payload.size(), shard.name(), &rv);
    if (!st.ok()) return Status::Corruption(where() + ": " + st.message());
    const int16_t* pcm = nullptr;
    size_t n = 0;
    if (const shards::FieldView* f = rv.Find(shards::FieldType::kAudioPcm16)) {
      pcm = reinterpret_cast<const int16_t*>(f->data);
      n = f->size / 2;
    } else if (const shards::FieldView* f = rv.Find(shards::FieldType::kAudioFlac)) {
      int rate = 0;
      st = features::DecodeFlac(reinterpret_cast<const uint8_t*>(f->data), f->size, shard.name(),
                                &s->chunk_pcm, &rate);
      if (!st.ok()) return Status::Corruption(where() + ": " + st.message());
      pcm = s->chunk_pcm.data();
      n = s->chunk_pcm.size();
    } else {
      return Status::Corruption(where() + ": no audio field");
    }
    if (n != shard.record(c).duration)
      return Status::Corruption(where() + ": " + std::to_string(n) + " samples, the index says " +
                                std::to_string(shard.record(c).duration));
    const uint64_t take = std::min<uint64_t>(n - skip, samples - filled);
    std::memcpy(s->segment_pcm.data() + filled, pcm + skip, take * sizeof(int16_t));
    filled += take;
    skip = 0;
  }
  return Status::OK();
}

// The chunks [first, *end) of the recording whose first chunk is record `first`, and its samples.
Status RecordingChunks(const shards::ShardReader& shard, size_t first, size_t* end,
                       uint64_t* total) {
  *total = 0;
  size_t c = first;
  for (; c < shard.num_records(); ++c) {
    std::string_view aux = shard.aux(c);
    shards::RecordingRef ref;
    if (!ref.DecodeFrom(&aux).ok() || ref.kind != shards::RefKind::kChunk) break;
    if ((c == first) != (ref.chunk == 0)) break;
    if (ref.offset != *total)
      return Status::Corruption(
          RecordName(shard, c) + ": chunk at sample " + std::to_string(ref.offset) +
          ", its recording's chunks before it hold " + std::to_string(*total));
    *total += ref.samples;
  }
  *end = c;
  return Status::OK();
}

constexpr uint64_t kWindowSalt = 0x77696e646f77ull;  // "window": a stream apart from augmentation's

}  // namespace

Status AddSegmentAudio(const shards::ShardReader& shard, size_t local, DecodeScratch* s,
                       shards::RecordView* record, uint64_t* blocks_read) {
  shards::RecordingRef ref;
  shards::SegmentSpan span;
  SLUICE_RETURN_IF_ERROR(shards::ReadRecordingRef(shard, local, &ref, &span));
  if (ref.kind != shards::RefKind::kSegment)
    return Status::Corruption(RecordName(shard, local) +
                              " is a chunk of a stored recording, not a segment");
  SLUICE_RETURN_IF_ERROR(CutSamples(
      shard, span.first_chunk, span.offset, span.samples,
      [&] { return "segment '" + std::string(shard.key(local)) + "'"; }, s, blocks_read));
  if (record->num_fields >= shards::kMaxFields || record->Find(shards::FieldType::kAudioPcm16) ||
      record->Find(shards::FieldType::kAudioFlac))
    return Status::Corruption(RecordName(shard, local) + ": a segment that holds audio of its own");
  record->fields[record->num_fields++] = {shards::FieldType::kAudioPcm16,
                                          reinterpret_cast<const char*>(s->segment_pcm.data()),
                                          static_cast<uint32_t>(span.samples * sizeof(int16_t))};
  return Status::OK();
}

Status SelectWindows(const Sources& sources, uint64_t window_samples,
                     const std::function<uint64_t(const shards::RecordEntry&)>& length_of,
                     IndexColumns* index) {
  for (size_t src = 0; src < sources.size(); ++src)
    if (!sources.source(src).manifest().stored_segments())
      return Status::InvalidArgument(
          sources.source(src).dir() +
          ": window_seconds cuts windows of stored recordings, and this dataset's segments were "
          "cut at ingest. HINT: shardify audio --segments stored, or leave window_seconds at 0");
  index->selected.assign(index->num_records(), 0);
  for (size_t g = 0; g < sources.num_shards(); ++g) {
    const shards::ShardReader& shard = sources.shard(g);
    const uint64_t first = index->shard_first_record[g];
    for (size_t i = 0; i < shard.num_records();) {
      std::string_view aux = shard.aux(i);
      shards::RecordingRef ref;
      SLUICE_RETURN_IF_ERROR(ref.DecodeFrom(&aux));  // DeselectChunks checked every ref
      if (ref.kind != shards::RefKind::kChunk || ref.chunk != 0) {
        ++i;
        continue;
      }
      size_t end = i;
      uint64_t total = 0;
      SLUICE_RETURN_IF_ERROR(RecordingChunks(shard, i, &end, &total));
      // The recording's first chunk stands for the recording: its row is the window.
      shards::RecordEntry e = shard.record(i);
      e.duration = std::min(window_samples, total);
      e.tokens = 0;
      index->selected[first + i] = 1;
      index->duration[first + i] = e.duration;
      index->tokens[first + i] = 0;
      index->length[first + i] = length_of(e);
      i = end;
    }
  }
  return Status::OK();
}

uint64_t WindowSamples(double window_seconds, int sample_rate) {
  return window_seconds > 0
             ? std::max<uint64_t>(1,
                                  static_cast<uint64_t>(std::llround(window_seconds * sample_rate)))
             : 0;
}

uint64_t WindowStart(uint64_t seed, uint64_t epoch, uint64_t record_id, uint64_t total,
                     uint64_t window) {
  if (total <= window) return 0;
  Rng rng(StreamKey(seed ^ kWindowSalt, epoch, record_id));
  return static_cast<uint64_t>(rng.UniformInt(0, static_cast<int64_t>(total - window)));
}

Status MakeWindow(const shards::ShardReader& shard, size_t local, uint64_t record_id, uint64_t seed,
                  uint64_t epoch, uint64_t window_samples, DecodeScratch* s,
                  shards::RecordView* record, shards::RecordEntry* entry, uint64_t* blocks_read) {
  size_t end = local;
  uint64_t total = 0;
  SLUICE_RETURN_IF_ERROR(RecordingChunks(shard, local, &end, &total));
  const uint64_t w = std::min(window_samples, total);
  const uint64_t start = WindowStart(seed, epoch, record_id, total, w);
  auto what = [&] {
    return "window of recording '" + std::string(shard.key(local)) + "' at sample " +
           std::to_string(start);
  };
  SLUICE_RETURN_IF_ERROR(
      CutSamples(shard, static_cast<uint32_t>(local), start, w, what, s, blocks_read));
  // The segments that follow the chunks: those the window holds whole give their text (and ids),
  // in their order. One that overlaps the window only in part gives nothing.
  s->window_text.clear();
  s->window_ids.clear();
  bool ids = false;
  for (size_t j = end; j < shard.num_records(); ++j) {
    shards::RecordingRef ref;
    shards::SegmentSpan span;
    std::string_view aux = shard.aux(j);
    if (!ref.DecodeFrom(&aux).ok() || ref.kind != shards::RefKind::kSegment) break;
    if (ref.chunk < local || ref.chunk >= end) break;  // another recording's
    SLUICE_RETURN_IF_ERROR(shards::ReadRecordingRef(shard, j, &ref, &span));
    std::string_view chunk_aux = shard.aux(span.first_chunk);
    shards::RecordingRef chunk;
    SLUICE_RETURN_IF_ERROR(chunk.DecodeFrom(&chunk_aux));
    const uint64_t first = chunk.offset + span.offset;
    if (first < start || first + span.samples > start + w) continue;
    const uint32_t b = shard.record(j).block;
    if (s->text_shard != &shard || s->text_block != b) {
      s->text_shard = nullptr;
      SLUICE_RETURN_IF_ERROR(shard.ReadCompressedBlock(b, &s->chunk_compressed));
      ++*blocks_read;
      SLUICE_RETURN_IF_ERROR(shard.DecodeBlock(b, s->chunk_compressed.view(), &s->text_raw));
      s->text_shard = &shard;
      s->text_block = b;
    }
    const std::string_view payload = shard.RecordPayload(j, s->text_raw);
    shards::RecordView rv;
    Status st = shards::ParseRecord(payload.data(), payload.size(), RecordName(shard, j), &rv);
    if (!st.ok()) return Status::Corruption(st.message());
    if (const shards::FieldView* t = rv.Find(shards::FieldType::kText)) {
      if (!s->window_text.empty()) s->window_text.push_back(' ');
      s->window_text.append(t->data, t->size);
    }
    if (const shards::FieldView* t = rv.Find(shards::FieldType::kTokens)) {
      ids = true;
      s->window_ids.append(t->data, t->size);
    }
  }
  *record = shards::RecordView();
  record->fields[record->num_fields++] = {shards::FieldType::kAudioPcm16,
                                          reinterpret_cast<const char*>(s->segment_pcm.data()),
                                          static_cast<uint32_t>(w * sizeof(int16_t))};
  record->fields[record->num_fields++] = {shards::FieldType::kText, s->window_text.data(),
                                          static_cast<uint32_t>(s->window_text.size())};
  if (ids)
    record->fields[record->num_fields++] = {shards::FieldType::kTokens, s->window_ids.data(),
                                            static_cast<uint32_t>(s->window_ids.size())};
  *entry = shard.record(local);
  entry->duration = w;
  entry->tokens = static_cast<uint32_t>(s->window_ids.size() / 4);
  return Status::OK();
}

}  // namespace sluice::loader
