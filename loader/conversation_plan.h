// Conversation packing (docs/conversations.md, "Loading"): rows of whole conversations up to a
// budget of LLM tokens, planned from the index alone, as a pure function of (index, template,
// encoder spec, BatchingOptions, PackingOptions, seed, epoch, rank, world).
//
// A conversation's cost is the length of its rendering (RenderConversation, chat_template.h):
// the template's pieces, its text turns' token ids and, per audio turn, the encoder frames of its
// samples (features/encoder_frames.h). Every one of these is in the turn table the index's aux
// area holds per record (shards/conversation.h), so no payload is read to plan an epoch.
//
// The rows are the document fits' (pack_fit.h) over those costs, with L = packing.seq_len the
// budget: a conversation is never split (an audio span cannot be cut), so split_long must be
// false and too_long skip (a longer one is left out and counted: EpochPlan::skipped_documents,
// skipped_tokens). Shuffle, rank split, repeats and elastic resume are the fits' as they are.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "features/encoder_frames.h"
#include "loader/chat_template.h"
#include "loader/options.h"
#include "loader/plan.h"
#include "loader/record_filter.h"
#include "shards/conversation.h"
#include "shards/shard_reader.h"

namespace sluice::loader {

// What ConversationOptions name, read and resolved once by Loader::Open.
struct ConversationSpec {
  ChatTemplate chat;  // resolved with the dataset's tokenizer
  features::EncoderFramesSpec frames;
  // A mixture's plain ASR records, rendered as the template's task conversations: the records
  // [asr_records[2k], asr_records[2k + 1]) of the index (one range per ASR source).
  std::vector<uint64_t> asr_records;
  bool asr_record(uint64_t r) const {
    for (size_t k = 0; k + 1 < asr_records.size(); k += 2)
      if (r >= asr_records[k] && r < asr_records[k + 1]) return true;
    return false;
  }
};

// Reads both files of `options` (a template file, an encoder preset or file) through base/sysio
// and resolves the template with `tokenizer`: InvalidArgument naming the option and the file.
// The spec's sample rate must be the dataset's `sample_rate`, or its frame counts would be
// another rate's. Without `audio_turns` (AnyAudioTurn) the template alone is needed: no encoder
// spec (out->frames is left default unless one is given), no placeholder; with them, both.
Status LoadConversationSpec(const ConversationOptions& options,
                            const features::Tokenizer& tokenizer, int sample_rate, bool audio_turns,
                            ConversationSpec* out);

// Every record's filter columns (record_filter.h), llm_tokens the costs ConversationIndexTokens
// gives, in one walk over the turn tables. Errors as ConversationIndexTokens'. A mixture's plain
// ASR shards (asr_shards[g] set; none when empty) count each record as the template's task
// conversation (AsrTaskEntries) from its index entry's duration and transcript ids:
// InvalidArgument naming the shard and record for a template without a task or a record without
// transcript ids.
Status ConversationIndexColumns(const std::vector<const shards::ShardReader*>& shards,
                                const ChatTemplate& t, const features::EncoderFramesSpec& spec,
                                bool ids_stored, ConversationColumns* out,
                                std::span<const uint8_t> asr_shards = {});

// The costs of an ASR source's records [first, last) of `index` as the template's task
// conversations (AsrTaskTurns, chat_template.h): each from its duration (samples) and token
// (transcript ids, which must be the LLM tokenizer's) columns, so a mixture of ASR and
// conversation datasets is planned from the index alone. InvalidArgument for a template without
// a task, or a record without a transcript count (naming its global id).
Status AsrTaskIndexTokens(const ChatTemplate& t, const features::EncoderFramesSpec& spec,
                          const IndexColumns& index, uint64_t first, uint64_t last,
                          std::vector<uint64_t>* tokens);

// Whether any record of `shards` has an audio turn, from the index's turn tables (no payload
// read). Corruption as ConversationIndexTokens'.
Status AnyAudioTurn(const std::vector<const shards::ShardReader*>& shards, bool* any);

// The tokens `turns` render to with the resolved template `t`: exactly
// RenderConversation(t, turns, EncoderFrames(spec, .)).ids.size(). `ids_stored`: the dataset stores
// token ids (manifest field "tokens"); without, a turn with text is InvalidArgument naming
// `where` with the shardify hint, as rendering would be.
Status ConversationTokens(const ChatTemplate& t, const features::EncoderFramesSpec& spec,
                          std::span<const shards::TurnEntry> turns, bool ids_stored,
                          std::string_view where, uint64_t* tokens);

// Every record's cost, in the order of `shards` (IndexColumns' record order), from each shard's
// aux area. Corruption naming the shard file and the record for a shard without an aux area (not
// a conversation dataset) or a turn table that does not parse.
Status ConversationIndexTokens(const std::vector<const shards::ShardReader*>& shards,
                               const ChatTemplate& t, const features::EncoderFramesSpec& spec,
                               bool ids_stored, std::vector<uint64_t>* tokens);

// InvalidArgument, with the option to change, unless `packing` packs whole conversations:
// seq_len > 0, pack_mode first_fit or best_fit, split_long false, too_long skip.
Status CheckConversationPacking(const PackingOptions& packing);

// Puts the costs (per record) into index->tokens, where the fits read lengths; a cost over
// 2^32 - 1 is counted as that, longer than any row. InvalidArgument for a count that is not the
// index's.
Status SetConversationTokens(const std::vector<uint64_t>& tokens, IndexColumns* index);

// The epoch's plan over an index whose tokens are the costs (SetConversationTokens):
// MakeFitPlan (pack_fit.h) once CheckConversationPacking passes; its errors otherwise. `mix`: the
// sources' weights, for a mixture (their records follow them as MakeFitPlan says).
Status MakeConversationPlan(const IndexColumns& index, const BatchingOptions& batching,
                            const PackingOptions& packing, uint64_t seed, uint64_t epoch,
                            const std::vector<WorldSegment>& earlier, int rank, int world,
                            EpochPlan* plan, const MixOptions* mix = nullptr);

}  // namespace sluice::loader
