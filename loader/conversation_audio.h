// The audio of a conversation dataset's batches (docs/conversations.md, "The batch's audio";
// layout in loader/batch.h): per audio turn of the batch's rows, in row order then span order,
// the turn's features as the loader's feature options give them (fbank, spectrogram, or the raw
// samples with dim 1), padded per audio, its length in frames, and the map from the audio to its
// placeholder span (row, start column, length).
//
// Sized from the index alone: the turn tables in the index's aux area give each record's audio
// turns and its longest turn's samples, so a plan's batch knows its audio count and longest
// audio before any payload is read; the pool reserves that at Start and collation allocates
// nothing. Any collator that places whole conversations in rows calls Write once per placed
// conversation, with the audio slots it gave that conversation.
//
//   std::unique_ptr<ConversationAudio> audio;
//   SLUICE_RETURN_IF_ERROR(ConversationAudio::Create(manifest, options, shards, &audio));
//   AudioShape shape = audio->Shape(records_of_the_batch);      // plan time: reserve
//   audio->Write(record, turns, rendered, row, column, first_slot, ...);  // decode time
//
// Packed rows hold several conversations (column: where each starts); a padded row holds one
// at column 0, as wide as its rendering.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "features/fbank.h"
#include "features/spectrogram.h"
#include "loader/batch.h"
#include "loader/chat_template.h"
#include "loader/feature_extractor.h"
#include "loader/options.h"
#include "shards/conversation.h"
#include "shards/manifest.h"
#include "shards/record.h"
#include "shards/shard_reader.h"

namespace sluice::loader {

// A batch's audio: how many audio turns, and the longest one's frames.
struct AudioShape {
  uint64_t count = 0;
  uint64_t max_frames = 0;
};

class ConversationAudio {
 public:
  // For a conversation dataset (`manifest`, its `shards` in IndexColumns' record order) whose
  // records have audio turns, with the feature options of `options` resolved at the dataset's
  // rate. InvalidArgument naming the option for one that cannot apply to audio turns
  // (precomputed features, speed_perturb, spec_augment: an audio's frames would no longer be
  // those its placeholder span was counted for, or nothing implements it per turn); Corruption
  // as the turn tables' decoder's. A mixture's plain ASR shards (asr_shards[g] set) hold
  // records of one audio turn each, all the record's samples (AsrTaskTurns, chat_template.h);
  // ConversationIndexColumns has checked their durations.
  static Status Create(const shards::Manifest& manifest, const LoaderOptions& options,
                       const std::vector<const shards::ShardReader*>& shards,
                       std::unique_ptr<ConversationAudio>* out,
                       std::span<const uint8_t> asr_shards = {});
  ~ConversationAudio();

  int dim() const { return dim_; }  // feature bins; 1 for raw samples
  // Feature frames of a turn of `samples` samples (the samples themselves for raw).
  uint64_t Frames(uint64_t samples) const;
  // The audio of the records `records` (ids of the index the shards were given in).
  AudioShape Shape(std::span<const uint64_t> records) const;
  uint32_t audio_turns(uint64_t record) const { return turns_[record]; }
  // Sets f's audio shape to `shape` and sizes its three audio arrays for it, the features in f's
  // dtype; *allocations counts the arrays that grew. IOError naming `what` and batch `j` when
  // the allocator fails. Packed and padded collators both open a batch's audio with it.
  Status ReserveBatch(const AudioShape& shape, const char* what, uint32_t j, BatchFields* f,
                      uint64_t* allocations) const;

  // Writes the audio of one conversation placed at `column` of `row`: its audio turns, in span
  // order, into slots first_slot, first_slot + 1, ... of `f` (sized by Shape for this batch):
  // features converted to f's dtype and zero past each length, lengths, spans. `turns` are the
  // record's decoded turns (shards::DecodeConversation), `rendered` their rendering. The dither
  // of turn t is keyed by Mix64(StreamKey(seed, epoch, record) + t). Corruption naming `where`
  // when the record's audio disagrees with its turn table, or a span with the frames counted for
  // it at plan time; an audio span cut at the row's end (f's seq_len; a padded row's end is
  // its conversation's) cannot happen (whole conversations only) and is an InvalidArgument.
  Status Write(const shards::RecordView& record, std::span<const shards::ConversationTurn> turns,
               const RenderedConversation& rendered, size_t row, uint64_t column,
               uint64_t first_slot, uint64_t seed, uint64_t epoch, uint64_t record_id,
               std::string_view where, DecodeScratch* s, BatchFields* f) const;

  // After kSkip refilled rows (CopyRow, ClearRow): row i of `f` now holds the conversations of
  // row source[i] (itself, the intact row a lost one copies, or -1 for a cleared row), so it
  // gets that row's audio as written, slots [row_first[source[i]], row_first[source[i] + 1]),
  // in row order as before. The old arrays are copied aside; a batch whose copies hold more
  // audio than planned grows (counted in *allocations): IOError when the allocator fails.
  static Status RefillRows(std::span<const uint32_t> row_first, std::span<const int32_t> source,
                           BatchFields* f, uint64_t* allocations);

 private:
  ConversationAudio() = default;

  int dim_ = 1;
  int sample_rate_ = 0;
  FeatureKind kind_ = FeatureKind::kRaw;
  Cmvn cmvn_ = Cmvn::kNone;
  std::unique_ptr<features::FbankComputer> fbank_;
  std::unique_ptr<features::SpectrogramComputer> spectrogram_;
  std::vector<uint32_t> turns_;        // per record: its audio turns
  std::vector<uint32_t> max_samples_;  // per record: its longest audio turn's samples
};

}  // namespace sluice::loader
