#include "shards/recording.h"

#include "shards/coding.h"
#include "shards/shard_reader.h"

namespace sluice::shards {

void RecordingRef::EncodeTo(std::string* dst) const {
  dst->push_back(static_cast<char>(kind));
  dst->append(3, '\0');  // reserved
  PutFixed32(dst, chunk);
  PutFixed64(dst, offset);
  PutFixed64(dst, samples);
}

Status RecordingRef::DecodeFrom(std::string_view* input) {
  if (input->size() < kRecordingRefSize)
    return Status::Corruption("recording ref: " + std::to_string(input->size()) +
                              " bytes, expected " + std::to_string(kRecordingRefSize));
  const char* p = input->data();
  const auto k = static_cast<uint8_t>(p[0]);
  if (k != static_cast<uint8_t>(RefKind::kChunk) && k != static_cast<uint8_t>(RefKind::kSegment))
    return Status::Corruption("recording ref: unknown kind " + std::to_string(k));
  if (p[1] != 0 || p[2] != 0 || p[3] != 0)
    return Status::Corruption("recording ref: reserved bytes 1..3 are not zero");
  kind = static_cast<RefKind>(k);
  chunk = DecodeFixed32(p + 4);
  offset = DecodeFixed64(p + 8);
  samples = DecodeFixed64(p + 16);
  if (samples == 0) return Status::Corruption("recording ref: 0 samples");
  input->remove_prefix(kRecordingRefSize);
  return Status::OK();
}

namespace {

Status DecodeRef(const ShardReader& shard, size_t i, RecordingRef* ref) {
  auto where = [&] {
    return shard.name() + ": record " + std::to_string(i) + " '" + std::string(shard.key(i)) +
           "': ";
  };
  std::string_view aux = shard.aux(i);
  if (aux.size() != kRecordingRefSize)
    return Status::Corruption(where() + "aux bytes hold " + std::to_string(aux.size()) +
                              " bytes, not a recording ref of " +
                              std::to_string(kRecordingRefSize));
  Status st = ref->DecodeFrom(&aux);
  if (!st.ok()) return Status::Corruption(where() + st.message());
  if (ref->samples != shard.record(i).duration)
    return Status::Corruption(where() + "ref holds " + std::to_string(ref->samples) +
                              " samples, the record's duration " +
                              std::to_string(shard.record(i).duration));
  return Status::OK();
}

}  // namespace

Status ReadRecordingRef(const ShardReader& shard, size_t i, RecordingRef* ref, SegmentSpan* span) {
  SLUICE_RETURN_IF_ERROR(DecodeRef(shard, i, ref));
  if (ref->kind != RefKind::kSegment) return Status::OK();
  auto bad = [&](const std::string& why) {
    return Status::Corruption(shard.name() + ": record " + std::to_string(i) + " '" +
                              std::string(shard.key(i)) + "': segment ref: " + why);
  };
  if (ref->chunk >= shard.num_records())
    return bad("chunk record " + std::to_string(ref->chunk) + " is not in the shard (" +
               std::to_string(shard.num_records()) + " records)");
  RecordingRef c;
  SLUICE_RETURN_IF_ERROR(DecodeRef(shard, ref->chunk, &c));
  if (c.kind != RefKind::kChunk)
    return bad("record " + std::to_string(ref->chunk) + " is not a chunk");
  if (ref->offset >= c.samples)
    return bad("offset " + std::to_string(ref->offset) + " is past the chunk's " +
               std::to_string(c.samples) + " samples");
  // The chunks after the first, in order, until they hold offset + samples.
  uint64_t covered = c.samples - ref->offset;
  uint32_t end = ref->chunk + 1;
  uint64_t next_first = c.offset + c.samples;
  while (covered < ref->samples) {
    if (end >= shard.num_records())
      return bad("its recording ends before its " + std::to_string(ref->samples) + " samples");
    RecordingRef n;
    SLUICE_RETURN_IF_ERROR(DecodeRef(shard, end, &n));
    if (n.kind != RefKind::kChunk || n.chunk == 0 || n.offset != next_first)
      return bad("its recording ends (record " + std::to_string(end) + ") before its " +
                 std::to_string(ref->samples) + " samples");
    covered += n.samples;
    next_first += n.samples;
    ++end;
  }
  span->first_chunk = ref->chunk;
  span->end_chunk = end;
  span->offset = ref->offset;
  span->samples = ref->samples;
  return Status::OK();
}

}  // namespace sluice::shards
