// libFuzzer target for `shardify conversations`' JSONL lines (tools/shardify/conversation_line.h):
// every line goes through ParseConversationLine as shardify runs it. A line is accepted or
// rejected with a reason, never a crash, and an accepted line satisfies what the rest of shardify
// relies on: a key within kMaxKeySize, 1 .. kMaxConversationTurns turns, each with text or an
// audio path, finite non-negative offsets, a known role, and the turn table round-trips.
// Seeds: corpus/conversation_line, written by hand (our, NeMo's and ShareGPT's spellings).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "conversation_line.h"
#include "shards/conversation.h"
#include "shards/format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice::shardify;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  while (!in.empty()) {
    const size_t nl = in.find('\n');
    std::string line(in.substr(0, nl));
    in.remove_prefix(nl == std::string_view::npos ? in.size() : nl + 1);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    ConversationLine c;
    std::string reason;
    if (!ParseConversationLine(line, "f:1", &c, &reason)) {
      if (reason.empty()) std::abort();  // rejects.jsonl would hold no reason
      continue;
    }
    if (c.key.empty() || c.key.size() > sluice::shards::kMaxKeySize) std::abort();
    if (c.turns.empty() || c.turns.size() > kMaxConversationTurns) std::abort();
    std::vector<sluice::shards::TurnEntry> entries;
    for (const ConversationTurnIn& t : c.turns) {
      if (t.text.empty() && t.audio_path.empty()) std::abort();
      if (static_cast<uint8_t>(t.role) > sluice::shards::kMaxRole) std::abort();
      if (!std::isfinite(t.decode.offset_seconds) || t.decode.offset_seconds < 0) std::abort();
      entries.push_back({t.role, !t.audio_path.empty(), static_cast<uint32_t>(t.text.size()), 0,
                         t.audio_path.empty() ? 0u : 1u});
    }
    std::string table;
    sluice::shards::EncodeTurnTable(entries, &table);
    std::vector<sluice::shards::TurnEntry> back;
    if (!sluice::shards::DecodeTurnTable(table, "fuzz", &back).ok() ||
        back.size() != entries.size())
      std::abort();
  }
  return 0;
}
