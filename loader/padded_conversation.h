// Conversations on the padded path (PackingOptions::seq_len 0; docs/conversations.md, "Padded
// batches"): a row per conversation, its rendering's token ids padded to the batch's longest,
// planned like ASR records (plan.h) with the conversation's encoder frames as its length and its
// rendering's tokens as its tokens, so bucket_2d buckets on (encoder frames, LLM tokens).
#pragma once

#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "loader/batch_buffer.h"
#include "loader/chat_template.h"
#include "loader/conversation_plan.h"
#include "shards/conversation.h"
#include "shards/record.h"

namespace sluice::loader {

// Decodes conversation record `rv` (`where` names it in errors) into *turns and renders it with
// `spec` into *out. Corruption naming `where` when the rendering's length is not `want`, the cost
// its turn table in the index gave the plan.
Status RenderConversationRecord(const ConversationSpec& spec, const shards::RecordView& rv,
                                std::string_view where, uint64_t want,
                                std::vector<shards::ConversationTurn>* turns,
                                RenderedConversation* out);

// The padded path's one call point for a conversation's audio: fills row `row` of `b`'s audio
// arrays (the features of each audio turn of `turns` with their lengths, and the map from each
// placeholder span of `rendered` to its audio turn; loader/conversation_audio.h) from the record
// `rv`. Batches of the padded path carry no audio arrays yet: it fills nothing and returns OK.
Status FillPaddedConversationAudio(const ConversationSpec& spec, const shards::RecordView& rv,
                                   std::span<const shards::ConversationTurn> turns,
                                   const RenderedConversation& rendered, size_t row,
                                   BatchBuffer* b);

}  // namespace sluice::loader
