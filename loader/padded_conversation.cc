#include "loader/padded_conversation.h"

#include <string>

#include "features/encoder_frames.h"

namespace sluice::loader {

Status RenderConversationRecord(const ConversationSpec& spec, const shards::RecordView& rv,
                                std::string_view where, uint64_t want,
                                std::vector<shards::ConversationTurn>* turns,
                                RenderedConversation* out) {
  SLUICE_RETURN_IF_ERROR(shards::DecodeConversation(rv, where, turns));
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
