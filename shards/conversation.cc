#include "shards/conversation.h"

#include "shards/coding.h"
#include "shards/fields.h"

namespace sluice::shards {

const char* RoleName(Role r) {
  switch (r) {
    case Role::kSystem: return "system";
    case Role::kUser: return "user";
    case Role::kAssistant: return "assistant";
  }
  return "unknown";
}

void EncodeTurnTable(std::span<const TurnEntry> turns, std::string* dst) {
  PutFixed32(dst, static_cast<uint32_t>(turns.size()));
  PutFixed32(dst, 0);  // reserved
  for (const TurnEntry& t : turns) {
    dst->push_back(static_cast<char>(t.role));
    dst->push_back(t.has_audio ? 1 : 0);
    PutFixed16(dst, 0);  // reserved
    PutFixed32(dst, t.text_bytes);
    PutFixed32(dst, t.tokens);
    PutFixed32(dst, t.samples);
  }
}

Status DecodeTurnTable(std::string_view bytes, std::string_view where,
                       std::vector<TurnEntry>* turns) {
  auto corrupt = [&](const std::string& why) {
    return Status::Corruption(std::string(where) + ": turn table: " + why);
  };
  if (bytes.size() < kTurnTableHeaderSize)
    return corrupt(std::to_string(bytes.size()) + " bytes, shorter than its 8-byte header");
  const uint32_t count = DecodeFixed32(bytes.data());
  if (DecodeFixed32(bytes.data() + 4) != 0) return corrupt("reserved bytes 4..7 are not zero");
  if (count > kMaxTurns)
    return corrupt(std::to_string(count) + " turns, over the limit of " +
                   std::to_string(kMaxTurns));
  if (bytes.size() != kTurnTableHeaderSize + uint64_t{count} * kTurnEntrySize)
    return corrupt(std::to_string(bytes.size()) + " bytes, but " + std::to_string(count) +
                   " turns take " + std::to_string(kTurnTableHeaderSize + count * kTurnEntrySize));
  turns->resize(count);
  for (uint32_t i = 0; i < count; ++i) {
    const char* p = bytes.data() + kTurnTableHeaderSize + size_t{i} * kTurnEntrySize;
    const auto role = static_cast<uint8_t>(p[0]), has_audio = static_cast<uint8_t>(p[1]);
    const std::string turn = "turn " + std::to_string(i) + ": ";
    if (role > kMaxRole) return corrupt(turn + "unknown role " + std::to_string(role));
    if (has_audio > 1) return corrupt(turn + "has_audio is " + std::to_string(has_audio));
    if (p[2] != 0 || p[3] != 0) return corrupt(turn + "reserved bytes are not zero");
    TurnEntry& t = (*turns)[i];
    t.role = static_cast<Role>(role);
    t.has_audio = has_audio == 1;
    t.text_bytes = DecodeFixed32(p + 4);
    t.tokens = DecodeFixed32(p + 8);
    t.samples = DecodeFixed32(p + 12);
    if (!t.has_audio && t.samples != 0)
      return corrupt(turn + std::to_string(t.samples) + " samples without audio");
  }
  return Status::OK();
}

uint64_t TotalSamples(std::span<const TurnEntry> turns) {
  uint64_t n = 0;
  for (const TurnEntry& t : turns) n += t.samples;
  return n;
}

Status DecodeConversation(const RecordView& record, std::string_view where,
                          std::vector<ConversationTurn>* turns) {
  const FieldView* table = record.Find(FieldType::kTurns);
  if (!table)
    return Status::Corruption(std::string(where) + ": not a conversation record (no turns field)");
  // Per thread, keeping its capacity: the loader's decode threads call this for every record.
  thread_local std::vector<TurnEntry> entries;
  SLUICE_RETURN_IF_ERROR(DecodeTurnTable(table->bytes(), where, &entries));
  const FieldView* text = record.Find(FieldType::kText);
  const std::string_view all_text = text ? text->bytes() : std::string_view();
  std::span<const uint32_t> all_ids;
  const FieldView* ids = record.Find(FieldType::kTokens);
  if (ids) SLUICE_RETURN_IF_ERROR(DecodeTokens(*ids, where, &all_ids));
  uint64_t text_at = 0, ids_at = 0, sample_at = 0;
  for (const TurnEntry& t : entries) {
    text_at += t.text_bytes;
    ids_at += t.tokens;
  }
  if (text_at != all_text.size())
    return Status::Corruption(std::string(where) + ": turns hold " + std::to_string(text_at) +
                              " bytes of text, the text field " + std::to_string(all_text.size()));
  // Ids are stored for every turn or for none.
  if (ids && ids_at != all_ids.size())
    return Status::Corruption(std::string(where) + ": turns hold " + std::to_string(ids_at) +
                              " token ids, the tokens field " + std::to_string(all_ids.size()));
  turns->resize(entries.size());
  text_at = ids_at = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    const TurnEntry& t = entries[i];
    ConversationTurn& out = (*turns)[i];
    out.entry = t;
    out.text = all_text.substr(text_at, t.text_bytes);
    out.tokens = ids ? all_ids.subspan(ids_at, t.tokens) : std::span<const uint32_t>();
    out.ids_stored = ids != nullptr;
    out.first_sample = sample_at;
    text_at += t.text_bytes;
    ids_at += t.tokens;
    sample_at += t.samples;
  }
  return Status::OK();
}

}  // namespace sluice::shards
