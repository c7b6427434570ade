// Conversations on the padded path (PackingOptions::seq_len 0; docs/conversations.md, "Padded
// batches"): a row per conversation, its rendering's token ids padded to the batch's longest,
// planned like ASR records (plan.h) with the conversation's encoder frames as its length and its
// rendering's tokens as its tokens, so bucket_2d buckets on (encoder frames, LLM tokens).
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "loader/batch_buffer.h"
#include "loader/chat_template.h"
#include "loader/conversation_audio.h"
#include "loader/conversation_plan.h"
#include "shards/conversation.h"
#include "shards/record.h"

namespace sluice::loader {

// Decodes conversation record `rv` (`where` names it in errors; `record` its id in the index)
// into *turns and renders it with `spec` into *out; a mixture's plain ASR record
// (spec.asr_record) becomes its task conversation (AsrTaskTurns) of `samples` samples (its index
// entry's duration) and its stored transcript ids, which *turns then view. Packed and padded
// collators both decode a row's conversation with it. Corruption naming `where` when the
// rendering's length is not `want`, the cost its turn table in the index gave the plan.
Status RenderConversationRecord(const ConversationSpec& spec, const shards::RecordView& rv,
                                uint64_t record, uint64_t samples, std::string_view where,
                                uint64_t want, std::vector<shards::ConversationTurn>* turns,
                                RenderedConversation* out);

// The padded path's one call point for a conversation's audio: writes the audio turns of the
// conversation in row `row` of `b` (decoded `turns` of record `rv`, id `record`, rendered as
// `rendered`) into the row's audio slots, b->audio_first[row] on (loader/conversation_audio.h),
// its placeholder spans at their columns of the row (the conversation starts at column 0).
// Nothing without `audio` (no audio turns in the dataset). Corruption naming `where` when the
// rendering's audio turns are not the slots the index gave the row, and as Write's.
Status FillPaddedConversationAudio(const ConversationAudio* audio, const shards::RecordView& rv,
                                   std::span<const shards::ConversationTurn> turns,
                                   const RenderedConversation& rendered, size_t row,
                                   uint64_t record, uint64_t seed, uint64_t epoch,
                                   const std::string& where, DecodeScratch* s, BatchBuffer* b);

}  // namespace sluice::loader
