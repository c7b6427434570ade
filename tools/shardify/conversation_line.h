// One line of `shardify conversations`' JSONL (docs/conversations.md): a conversation of turns,
// each with a role and text and/or audio, parsed and checked without opening any audio file. In
// its own file so the fuzzer (tests/fuzz/conversation_line_fuzzer.cc) and the tests drive exactly
// what shardify runs.
//
//   {"id": "c1", "system": "...", "turns": [{"role": "user", "audio": {"path": "a.wav",
//    "offset": 0.5, "duration": 2.0}}, {"role": "assistant", "text": "..."}]}
//   {"id": "c2", "conversations": [{"from": "User", "type": "audio", "value": "a.wav",
//    "duration": 2.0}, {"from": "Assistant", "type": "text", "value": "..."}]}     (NeMo)
#pragma once

#include <string>
#include <vector>

#include "features/audio.h"
#include "shards/conversation.h"

namespace sluice::shardify {

// The most turns a conversation may have (shards::kMaxTurns, the system prompt included).
inline constexpr size_t kMaxConversationTurns = shards::kMaxTurns;

struct ConversationTurnIn {
  shards::Role role = shards::Role::kUser;
  std::string text;                // UTF-8; empty for an audio-only turn
  std::string audio_path;          // as written (relative to the manifest's folder); empty: none
  features::DecodeOptions decode;  // the audio's "offset" and "duration"
};

struct ConversationLine {
  std::string key;                        // "id", else `default_key`
  std::vector<ConversationTurnIn> turns;  // the system prompt, when given, first
  // turns[0] is the "system" prompt: the JSON's turn i is turns[i + 1], and reasons name the
  // JSON's index (JsonTurnIndex).
  bool system_prompt = false;
};

// The index in the line's list of turns that reasons name for turns[i].
inline size_t JsonTurnIndex(const ConversationLine& c, size_t i) {
  return c.system_prompt ? i - 1 : i;
}

// Parses `line`. False, with the reason rejects.jsonl gives (naming the turn), for an empty line,
// invalid UTF-8 or JSON, no turns, an unknown role, a turn with neither text nor audio, a
// mistyped field, an offset or duration out of range, or a key over shards::kMaxKeySize.
bool ParseConversationLine(const std::string& line, const std::string& default_key,
                           ConversationLine* out, std::string* reason);

}  // namespace sluice::shardify
