// Sources: the datasets one Loader reads (one, or the sources of a weighted mixture) as one
// numbering of shards: source s's shards follow source s - 1's, and so do its blocks and records
// in IndexColumns (BuildSourceIndex). Open checks that the sources agree on what a batch holds.
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "loader/options.h"
#include "loader/plan.h"
#include "shards/dataset.h"

namespace sluice::loader {

class Sources {
 public:
  // Opens every dataset (manifest and shard indexes). A mixture (more than one source, or
  // epoch_records set) needs weights > 0 and sources that agree on their kind, sample rate,
  // precomputed features (when the loader would use them) and tokenizer: InvalidArgument naming
  // both directories and what differs. A mixture with a conversation dataset may also hold plain
  // ASR (audio) datasets, whose records become the template's task conversations: they must have
  // the conversations' sample rate and transcript ids of the conversations' tokenizer.
  static Status Open(const MixOptions& mix, const LoaderOptions& options,
                     std::unique_ptr<Sources>* out);

  bool mixed() const { return mixed_; }
  const MixOptions& mix() const { return mix_; }
  size_t size() const { return datasets_.size(); }
  const shards::Dataset& source(size_t s) const { return *datasets_[s]; }
  // The lead source's (the first, or a conversation mixture's first conversation source): the
  // others agree with it on everything the loader reads from it.
  const shards::Dataset& lead() const { return *datasets_[lead_]; }
  const shards::Manifest& manifest() const { return datasets_[lead_]->manifest(); }
  const std::string& dir() const { return datasets_[lead_]->dir(); }
  // Whether source s holds plain ASR records in a conversation mixture (asr_sources: any).
  bool asr(size_t s) const { return asr_[s]; }
  bool asr_sources() const { return std::find(asr_.begin(), asr_.end(), true) != asr_.end(); }

  size_t num_shards() const { return shards_.size(); }
  const shards::ShardReader& shard(size_t g) const { return *shards_[g]; }

 private:
  bool mixed_ = false;
  size_t lead_ = 0;
  std::vector<bool> asr_;  // per source
  MixOptions mix_;
  std::vector<std::unique_ptr<shards::Dataset>> datasets_;
  std::vector<const shards::ShardReader*> shards_;  // all sources' shards, in order
};

// BuildIndexColumns over every source's shards, with IndexColumns::source_first_record.
void BuildSourceIndex(const Sources& sources,
                      const std::function<uint64_t(const shards::RecordEntry&)>& length_of,
                      IndexColumns* out);

}  // namespace sluice::loader
