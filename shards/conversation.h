// Conversation records (docs/formats/shard.md, "Conversations"): a speech-LLM sample of turns,
// each with a role, text and/or audio. One turn table describes a record; it is stored twice,
// as the record's kTurns field and as the record's bytes in the index's aux area, so a planner
// budgets every turn (audio samples, text tokens or bytes) from the index alone.
//
//   turn table := count u32 | reserved u32 (0) | count * turn
//   turn       := role u8 | has_audio u8 (0|1) | reserved u16 (0) |
//                 text_bytes u32 | tokens u32 | samples u32            (16 bytes)
//
// The record's other fields hold the turns' contents concatenated in turn order: kText their
// UTF-8 text, kTokens (when tokenized) their ids, kAudioPcm16 / kAudioFlac their samples; a
// turn's span in each is the sum of the lengths of the turns before it.
// shards/ knows nothing of audio: an audio span is a range of sample indices.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "shards/record.h"

namespace sluice::shards {

inline constexpr size_t kTurnTableHeaderSize = 8;
inline constexpr size_t kTurnEntrySize = 16;
// More turns than any dialogue holds; a damaged count cannot make a reader allocate much.
inline constexpr uint32_t kMaxTurns = 4096;

enum class Role : uint8_t { kSystem = 0, kUser = 1, kAssistant = 2 };
inline constexpr uint8_t kMaxRole = 2;
// "system", "user", "assistant".
const char* RoleName(Role r);

// One turn's lengths: what the index holds per turn.
struct TurnEntry {
  Role role = Role::kUser;
  bool has_audio = false;
  uint32_t text_bytes = 0;  // UTF-8 bytes of the turn's text
  uint32_t tokens = 0;      // token ids of the text (0 when the dataset stores no ids)
  uint32_t samples = 0;     // audio samples at the dataset's rate (0 without audio)
};

// Appends the turn table of `turns` to *dst.
void EncodeTurnTable(std::span<const TurnEntry> turns, std::string* dst);
// Parses a turn table (the kTurns field, or ShardReader::aux of a conversation record).
// Corruption naming `where` for a size that is not the table's, a count over kMaxTurns, an unknown
// role, a has_audio other than 0 or 1, non-zero reserved bytes, or samples without has_audio.
Status DecodeTurnTable(std::string_view bytes, std::string_view where,
                       std::vector<TurnEntry>* turns);

// A decoded turn: its lengths and where its contents lie in the record (views into the payload).
struct ConversationTurn {
  TurnEntry entry;
  std::string_view text;
  std::span<const uint32_t> tokens;  // empty when the record stores no ids
  bool ids_stored = false;           // the record has a tokens field (tokens is then exact)
  uint64_t first_sample = 0;         // the turn's samples in the record's audio field
};

// The turns of a conversation record, with their text, ids and audio span. Corruption naming
// `where` when the record has no kTurns field, or when the turns' lengths do not add up to the
// text and, when the record has one, tokens fields' sizes (the audio field is the caller's to check
// against TotalSamples: FLAC must be decoded first).
Status DecodeConversation(const RecordView& record, std::string_view where,
                          std::vector<ConversationTurn>* turns);
uint64_t TotalSamples(std::span<const TurnEntry> turns);

}  // namespace sluice::shards
