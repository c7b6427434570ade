#include "loader/padded_conversation.h"

#include <string>

#include "features/encoder_frames.h"
#include "loader/token_ids.h"

namespace sluice::loader {

namespace {

// An ASR record's task conversation: its transcript ids (the tokens field, which the mixture's
// sources check the ASR dataset has) as the assistant's answer to the prompt and its audio.
Status AsrTaskRecordTurns(const ChatTemplate& t, const shards::RecordView& rv, uint64_t samples,
                          std::string_view where, std::vector<shards::ConversationTurn>* turns) {
  const shards::FieldView* f = rv.Find(shards::FieldType::kTokens);
  if (f == nullptr)
    return Status::Corruption(std::string(where) + ": an ASR record without transcript ids");
  std::span<const int32_t> ids;  // into the block: fields are 8-byte aligned in it
  SLUICE_RETURN_IF_ERROR(StoredTokenIds(*f, where, &ids));
  // Stored ids are never negative (StoredTokenIds checks), so their bits are the uint32 ids.
  const std::span<const uint32_t> transcript(reinterpret_cast<const uint32_t*>(ids.data()),
                                             ids.size());
  const Status st = AsrTaskTurns(t, static_cast<uint32_t>(samples), transcript, turns);
  if (!st.ok()) return Prefixed(st, std::string(where));
  return Status::OK();
}

}  // namespace

Status RenderConversationRecord(const ConversationSpec& spec, const shards::RecordView& rv,
                                uint64_t record, uint64_t samples, std::string_view where,
                                uint64_t want, std::vector<shards::ConversationTurn>* turns,
                                RenderedConversation* out) {
  if (spec.asr_record(record)) {
    SLUICE_RETURN_IF_ERROR(AsrTaskRecordTurns(spec.chat, rv, samples, where, turns));
  } else {
    SLUICE_RETURN_IF_ERROR(shards::DecodeConversation(rv, where, turns));
  }
  const Status st = RenderConversation(
      spec.chat, *turns,
      [&](uint64_t n) {
        return static_cast<uint64_t>(features::EncoderFrames(spec.frames, static_cast<int64_t>(n)));
      },
      out);
  // With the code the renderer chose: an id beyond int32 is no damage to skip past.
  if (!st.ok()) return Prefixed(st, std::string(where));
  if (out->ids.size() != want)
    return Status::Corruption(std::string(where) + ": renders to " +
                              std::to_string(out->ids.size()) +
                              " tokens, its turn table in the index to " + std::to_string(want));
  return Status::OK();
}

Status FillPaddedConversationAudio(const ConversationAudio* audio, const shards::RecordView& rv,
                                   std::span<const shards::ConversationTurn> turns,
                                   const RenderedConversation& rendered, size_t row,
                                   uint64_t record, uint64_t seed, uint64_t epoch,
                                   const std::string& where, DecodeScratch* s, BatchBuffer* b) {
  if (audio == nullptr) return Status::OK();
  const uint32_t first = b->audio_first[row], slots = b->audio_first[row + 1] - first;
  if (rendered.spans.size() != slots)
    return Status::Corruption(where + ": " + std::to_string(rendered.spans.size()) +
                              " audio turns, its turn table in the index " + std::to_string(slots));
  return audio->Write(rv, turns, rendered, row, 0, first, seed, epoch, record, where, s,
                      &b->fields());
}

}  // namespace sluice::loader
