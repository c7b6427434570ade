// libFuzzer target for record payloads (shards/record.h ParseRecord) and the decoders of the
// fields inside them, as the loader runs them: kTokens (shards DecodeTokens, loader
// StoredTokenIds), kFeaturesF16 (DecodeFeaturesF16 + HalfToFloat), kAudioFlac (DecodeFlac),
// kAudioPcm16 (Pcm16ToFloat), kTurns (DecodeConversation). Any payload gives a Status, never a
// crash; one ParseRecord accepts is canonical, so RecordBuilder rebuilds it byte for byte from
// its fields.
// Seeds: corpus/record (tests/fuzz/make_seeds.cc, written with RecordBuilder).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "features/flac.h"
#include "features/half.h"
#include "features/pcm.h"
#include "loader/token_ids.h"
#include "shards/conversation.h"
#include "shards/fields.h"
#include "shards/record.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice;
  // Records sit 8-byte aligned in a block buffer; the fields' readers rely on it.
  std::vector<uint64_t> aligned((size + 7) / 8);
  if (size > 0) std::memcpy(aligned.data(), data, size);
  const char* p = reinterpret_cast<const char*>(aligned.data());
  shards::RecordView view;
  if (!shards::ParseRecord(p, size, "fuzz", &view).ok()) return 0;
  shards::RecordBuilder rebuilt;
  std::vector<float> floats;
  std::vector<int16_t> pcm;
  for (size_t i = 0; i < view.num_fields; ++i) {
    const shards::FieldView& f = view.fields[i];
    rebuilt.AddField(f.type, f.data, f.size);
    switch (f.type) {
      case shards::FieldType::kTokens: {
        std::span<const uint32_t> u;
        std::span<const int32_t> ids;
        (void)shards::DecodeTokens(f, "fuzz", &u);
        (void)loader::StoredTokenIds(f, "fuzz", &ids);
        break;
      }
      case shards::FieldType::kFeaturesF16: {
        shards::FeaturesF16View v;
        if (shards::DecodeFeaturesF16(f, "fuzz", &v).ok()) {
          floats.resize(size_t{v.frames} * v.bins);
          features::HalfToFloat(v.values, floats.size(), floats.data());
        }
        break;
      }
      case shards::FieldType::kAudioFlac: {
        int rate = 0;
        (void)features::DecodeFlac(reinterpret_cast<const uint8_t*>(f.data), f.size, "fuzz", &pcm,
                                   &rate);
        break;
      }
      case shards::FieldType::kAudioPcm16:
        floats.resize(f.size / 2);
        features::Pcm16ToFloat(reinterpret_cast<const int16_t*>(f.data), f.size / 2, floats.data(),
                               1.0f);
        break;
      case shards::FieldType::kText: break;
      case shards::FieldType::kTurns: {
        // A conversation's turns against the record's other fields (shards/conversation.h).
        std::vector<shards::ConversationTurn> turns;
        (void)shards::DecodeConversation(view, "fuzz", &turns);
        break;
      }
    }
  }
  if (rebuilt.data() != std::string_view(p, size)) std::abort();
  return 0;
}
