#include "loader/conversation_plan.h"

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "base/file.h"
#include "loader/pack_fit.h"

namespace sluice::loader {

Status LoadConversationSpec(const ConversationOptions& options,
                            const features::Tokenizer& tokenizer, int sample_rate, bool audio_turns,
                            ConversationSpec* out) {
  // Without an audio turn nothing is counted in encoder frames nor filled with a placeholder:
  // instruction data needs the template alone.
  if (options.chat_template.empty() || (audio_turns && options.encoder_frames.empty()))
    return Status::InvalidArgument(
        audio_turns ? "a conversation dataset with audio turns needs conversation.chat_template "
                      "and conversation.encoder_frames. HINT: --chat-template template.json "
                      "--encoder-frames fastconformer (docs/conversations.md, \"Loading\")"
                    : "a conversation dataset needs conversation.chat_template. HINT: "
                      "--chat-template template.json (docs/conversations.md, \"Loading\")");
  std::string text;
  Status st = ReadFileToString(options.chat_template, &text);
  if (!st.ok()) return Status::InvalidArgument("chat_template: " + st.message());
  SLUICE_RETURN_IF_ERROR(ParseChatTemplate(text, options.chat_template, &out->chat));
  st = ResolveChatTemplate(tokenizer, &out->chat);
  if (!st.ok()) return Status::InvalidArgument(options.chat_template + ": " + st.message());
  if (audio_turns && !out->chat.has_placeholder)
    return Status::InvalidArgument(
        options.chat_template +
        ": $.placeholder: missing: the token that fills each audio span, which the dataset's "
        "audio turns need. HINT: \"placeholder\": \"<|audio|>\" (a special token of the "
        "tokenizer) or {\"ids\": [ID]}");
  out->frames = features::EncoderFramesSpec();
  if (options.encoder_frames.empty()) return Status::OK();
  st = features::ResolveEncoderFramesSpec(options.encoder_frames, &out->frames);
  if (!st.ok()) return Status::InvalidArgument("encoder_frames: " + st.message());
  if (out->frames.front_end.sample_rate != sample_rate)
    return Status::InvalidArgument("encoder_frames " + options.encoder_frames + " is for " +
                                   std::to_string(out->frames.front_end.sample_rate) +
                                   " Hz audio, the dataset's is " + std::to_string(sample_rate) +
                                   " Hz: its frame counts would be wrong. HINT: a spec file "
                                   "with \"sample_rate\": " +
                                   std::to_string(sample_rate) +
                                   " (docs/features.md), or shardify conversations --sample-rate " +
                                   std::to_string(out->frames.front_end.sample_rate));
  return Status::OK();
}

Status ConversationTokens(const ChatTemplate& t, const features::EncoderFramesSpec& spec,
                          std::span<const shards::TurnEntry> turns, bool ids_stored,
                          std::string_view where, uint64_t* tokens) {
  if (!t.resolved)
    return Status::InvalidArgument("ConversationTokens: the template is not resolved");
  uint64_t n = 0;
  for (size_t i = 0; i < turns.size(); ++i) {
    const shards::TurnEntry& turn = turns[i];
    // The same refusal as RenderConversation's: a cost without the ids would be a guess.
    // An empty `where`: the caller prefixes the record's (ForEachTurnTable's ASR records).
    const auto at = [&] {
      return (where.empty() ? std::string() : std::string(where) + ": ") + "turn " +
             std::to_string(i);
    };
    if (turn.text_bytes > 0 && !ids_stored)
      return Status::InvalidArgument(at() +
                                     ": text without token ids. HINT: shardify conversations "
                                     "--tokenizer hf:PATH/tokenizer.json");
    if (turn.has_audio && !t.has_placeholder)
      return Status::InvalidArgument(at() +
                                     ": an audio turn, and the template has no placeholder. "
                                     "HINT: \"placeholder\": \"<|audio|>\"");
    const RoleTemplate& rt = t.roles[static_cast<size_t>(turn.role)];
    n += rt.prefix.ids.size() + turn.tokens + rt.suffix.ids.size();
    if (turn.has_audio)
      n += rt.audio_prefix.ids.size() +
           static_cast<uint64_t>(features::EncoderFrames(spec, turn.samples)) +
           rt.audio_suffix.ids.size();
  }
  *tokens = n;
  return Status::OK();
}

namespace {

// Calls fn(where, turns) with each record's turn table, read from the index's aux area alone;
// a plain ASR record's (asr_shards[g] set for its shard g) is its task conversation's
// (AsrTaskEntries of `t`), from its index entry's duration and token count. An ASR record's
// `where` is built only for an error (planning allocates nothing per ASR record): fn gets an
// empty one, and its error is prefixed with the record's.
template <class Fn>
Status ForEachTurnTable(const std::vector<const shards::ShardReader*>& shards,
                        const ChatTemplate& t, std::span<const uint8_t> asr_shards, Fn&& fn) {
  std::vector<shards::TurnEntry> turns;
  std::string where;
  for (size_t g = 0; g < shards.size(); ++g) {
    const shards::ShardReader* s = shards[g];
    if (g < asr_shards.size() && asr_shards[g]) {
      const auto asr_where = [s](size_t i) {
        return s->name() + ": ASR record " + std::to_string(i) + " ('" + std::string(s->key(i)) +
               "')";
      };
      if (!t.has_task && s->num_records() > 0)
        return Status::InvalidArgument(
            asr_where(0) +
            ": an ASR record in a conversation mixture needs the template's task "
            "prompt. HINT: \"task\": {\"prompt\": \"Transcribe the audio.\"} "
            "(docs/conversations.md, \"ASR datasets as task conversations\")");
      for (size_t i = 0; i < s->num_records(); ++i) {
        const shards::RecordEntry& e = s->record(i);
        // An empty transcript (shardify audio keeps empty text) is an empty answer, whose
        // suffix still carries the loss: the model learns to answer nothing. The tokens field's
        // presence is the sources' check (a dataset without ids is refused there).
        if (e.duration > std::numeric_limits<uint32_t>::max())
          return Status::InvalidArgument(
              asr_where(i) +
              ": over 2^32 samples of audio, longer than an audio turn can be. "
              "HINT: shardify audio --max-duration, or split the recording");
        const std::array<shards::TurnEntry, 2> entries =
            AsrTaskEntries(t, static_cast<uint32_t>(e.duration), e.tokens);
        turns.assign(entries.begin(), entries.end());
        const Status st = fn(std::string(), turns);
        if (!st.ok()) return Prefixed(st, asr_where(i));
      }
      continue;
    }
    if (!s->has_aux() && s->num_records() > 0)
      return Status::Corruption(s->name() +
                                ": no turn tables in the index (no aux area): not a conversation "
                                "shard. HINT: make the dataset with shardify conversations");
    for (size_t i = 0; i < s->num_records(); ++i) {
      where = s->name() + ": record " + std::to_string(i) + " ('" + std::string(s->key(i)) + "')";
      SLUICE_RETURN_IF_ERROR(shards::DecodeTurnTable(s->aux(i), where, &turns));
      SLUICE_RETURN_IF_ERROR(fn(where, turns));
    }
  }
  return Status::OK();
}

}  // namespace

Status ConversationIndexTokens(const std::vector<const shards::ShardReader*>& shards,
                               const ChatTemplate& t, const features::EncoderFramesSpec& spec,
                               bool ids_stored, std::vector<uint64_t>* tokens) {
  tokens->clear();
  return ForEachTurnTable(
      shards, t, {}, [&](const std::string& where, const std::vector<shards::TurnEntry>& turns) {
        uint64_t n = 0;
        SLUICE_RETURN_IF_ERROR(ConversationTokens(t, spec, turns, ids_stored, where, &n));
        tokens->push_back(n);
        return Status::OK();
      });
}

Status ConversationIndexColumns(const std::vector<const shards::ShardReader*>& shards,
                                const ChatTemplate& t, const features::EncoderFramesSpec& spec,
                                bool ids_stored, ConversationColumns* out,
                                std::span<const uint8_t> asr_shards) {
  *out = ConversationColumns();
  return ForEachTurnTable(
      shards, t, asr_shards,
      [&](const std::string& where, const std::vector<shards::TurnEntry>& turns) {
        uint64_t n = 0, samples = 0, targets = 0, frames = 0;
        SLUICE_RETURN_IF_ERROR(ConversationTokens(t, spec, turns, ids_stored, where, &n));
        for (const shards::TurnEntry& turn : turns) {
          if (turn.role == shards::Role::kAssistant) targets += turn.tokens;
          if (!turn.has_audio) continue;
          samples += turn.samples;
          frames += static_cast<uint64_t>(features::EncoderFrames(spec, turn.samples));
        }
        out->audio_samples.push_back(samples);
        out->text_tokens.push_back(targets);
        out->encoder_frames.push_back(frames);
        out->llm_tokens.push_back(n);
        return Status::OK();
      });
}

Status AsrTaskIndexTokens(const ChatTemplate& t, const features::EncoderFramesSpec& spec,
                          const IndexColumns& index, uint64_t first, uint64_t last,
                          std::vector<uint64_t>* tokens) {
  tokens->clear();
  if (!t.has_task)
    return Status::InvalidArgument(
        "an ASR dataset in a conversation mixture needs the template's task prompt. HINT: "
        "\"task\": {\"prompt\": \"Transcribe the audio.\"} (docs/conversations.md)");
  // A count of 0 is an empty transcript: an empty answer (ForEachTurnTable).
  for (uint64_t r = first; r < last; ++r) {
    const std::array<shards::TurnEntry, 2> turns =
        AsrTaskEntries(t, static_cast<uint32_t>(index.duration[r]), index.tokens[r]);
    uint64_t n = 0;
    const Status st = ConversationTokens(t, spec, turns, true, "", &n);
    if (!st.ok()) return Prefixed(st, "ASR record " + std::to_string(r));
    tokens->push_back(n);
  }
  return Status::OK();
}

// Every table is read (a scan of the index in memory), so a damaged one is found here too.
Status AnyAudioTurn(const std::vector<const shards::ShardReader*>& shards, bool* any) {
  *any = false;
  return ForEachTurnTable(shards, ChatTemplate(), {},
                          [any](const std::string&, const std::vector<shards::TurnEntry>& turns) {
                            for (const shards::TurnEntry& t : turns) *any = *any || t.has_audio;
                            return Status::OK();
                          });
}

Status CheckConversationPacking(const PackingOptions& packing) {
  if (packing.seq_len == 0)
    return Status::InvalidArgument(
        "conversations are packed: seq_len (the row's budget of LLM tokens) must be set. HINT: "
        "--seq-len 4096");
  if (packing.pack_mode == PackMode::kConcat)
    return Status::InvalidArgument(
        "conversations: pack_mode concat would cut conversations across rows. HINT: --pack-mode "
        "best_fit (or first_fit)");
  // An audio turn's placeholder span cannot be split from its audio, nor a conversation cut
  // without losing what its answer refers to: only whole conversations go into rows.
  if (packing.split_long)
    return Status::InvalidArgument(
        "conversations are never split across rows: split_long must be false. HINT: "
        "--split-long false --too-long skip");
  if (packing.too_long != TooLong::kSkip)
    return Status::InvalidArgument(
        "conversations longer than seq_len cannot be truncated (an audio span would be cut): "
        "too_long must be skip (they are counted). HINT: --too-long skip");
  return Status::OK();
}

Status SetConversationTokens(const std::vector<uint64_t>& tokens, IndexColumns* index) {
  if (tokens.size() != index->num_records())
    return Status::InvalidArgument("conversations: " + std::to_string(tokens.size()) +
                                   " costs for " + std::to_string(index->num_records()) +
                                   " records");
  constexpr uint64_t kMax = std::numeric_limits<uint32_t>::max();
  index->tokens.resize(tokens.size());
  for (uint64_t r = 0; r < tokens.size(); ++r)
    index->tokens[r] = static_cast<uint32_t>(std::min(tokens[r], kMax));
  return Status::OK();
}

Status MakeConversationPlan(const IndexColumns& index, const BatchingOptions& batching,
                            const PackingOptions& packing, uint64_t seed, uint64_t epoch,
                            const std::vector<WorldSegment>& earlier, int rank, int world,
                            EpochPlan* plan, const MixOptions* mix) {
  SLUICE_RETURN_IF_ERROR(CheckConversationPacking(packing));
  return MakeFitPlan(index, batching, packing, seed, epoch, earlier, rank, world, mix, plan);
}

}  // namespace sluice::loader
