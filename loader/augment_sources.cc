#include "loader/augment_sources.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "features/pcm.h"
#include "loader/record_audio.h"
#include "shards/checksum.h"
#include "shards/record.h"
#include "storage/open.h"
#include "storage/url.h"

namespace sluice::loader {
namespace {

// Calls clip(where, id, samples) for the records of `shard(0 .. num_shards - 1)` whose index
// over all of them (their record ids) `keep` accepts, samples in [-1, 1]. Only the blocks that
// hold such a record are read; a FLAC clip at another rate than `sample_rate` is corrupt.
template <class Shard, class Keep, class Clip>
Status DecodeClips(const std::string& name, int sample_rate, size_t num_shards, Shard&& shard,
                   Keep&& keep, Clip&& clip) {
  shards::Buffer scratch, raw;
  std::vector<int16_t> pcm;
  std::vector<float> samples;
  uint64_t first_id = 0;
  for (size_t si = 0; si < num_shards; ++si) {
    const shards::ShardReader& s = shard(si);
    for (size_t b = 0; b < s.num_blocks(); ++b) {
      const size_t begin = s.first_record(b), end = s.first_record(b + 1);
      bool wanted = false;
      for (size_t r = begin; r < end && !wanted; ++r) wanted = keep(first_id + r);
      if (!wanted) continue;
      SLUICE_RETURN_IF_ERROR(Prefixed(s.ReadBlock(b, &scratch, &raw), name));
      for (size_t r = begin; r < end; ++r) {
        if (!keep(first_id + r)) continue;
        const std::string where =
            name + ": " + s.Where(b) + ": record '" + std::string(s.key(r)) + "'";
        const std::string_view payload = s.RecordPayload(r, raw);
        shards::RecordView rv;
        SLUICE_RETURN_IF_ERROR(
            Prefixed(shards::ParseRecord(payload.data(), payload.size(), s.name(), &rv), name));
        const int16_t* p = nullptr;
        size_t n = 0;
        SLUICE_RETURN_IF_ERROR(RecordPcm(
            rv, sample_rate, [&] { return where; }, &pcm, &p, &n));
        samples.resize(n);
        features::Pcm16ToFloat(p, n, samples.data(), 1.0f / 32768);
        SLUICE_RETURN_IF_ERROR(clip(where, first_id + r, samples));
      }
    }
    first_id += s.num_records();
  }
  return Status::OK();
}

// Opens the clips' dataset at `location` and checks it holds audio at the training data's rate.
Status OpenClips(const std::string& name, const std::string& location, const LoaderOptions& options,
                 int sample_rate, std::unique_ptr<shards::Dataset>* ds, std::string* content) {
  shards::ReadOptions ro;
  ro.verify_checksums = options.verify_checksums;
  SLUICE_RETURN_IF_ERROR(Prefixed(storage::OpenDataset(location, options.storage, ro, ds), name));
  const shards::Manifest& m = (*ds)->manifest();
  if (m.kind != "audio")
    return Status::InvalidArgument(name + ": a " + m.kind +
                                   " dataset; it must hold audio clips. HINT: shardify audio "
                                   "the clips' manifest");
  if (m.stored_segments())
    return Status::InvalidArgument(name +
                                   ": its segments are stored recordings' (shardify "
                                   "--segments stored); clips are records of their own. HINT: "
                                   "shardify audio the clips without --segments stored");
  if (m.sample_rate != sample_rate)
    return Status::InvalidArgument(name + ": clips at " + std::to_string(m.sample_rate) +
                                   " Hz, the training data is at " + std::to_string(sample_rate) +
                                   " Hz. HINT: shardify audio the clips again with --sample-rate " +
                                   std::to_string(sample_rate));
  if ((*ds)->num_records() == 0)
    return Status::InvalidArgument(name + ": the dataset has no clips");
  *content = shards::ChecksumHex(shards::ManifestFingerprint(m));
  return Status::OK();
}

// Calls clip(where, id, samples) for every record of the dataset at `location`.
template <class Clip>
Status ForEachClip(const std::string& option, const std::string& location,
                   const LoaderOptions& options, int sample_rate, std::string* content,
                   Clip&& clip) {
  const std::string name = option + " " + storage::RedactUrl(location);
  std::unique_ptr<shards::Dataset> ds;
  SLUICE_RETURN_IF_ERROR(OpenClips(name, location, options, sample_rate, &ds, content));
  return DecodeClips(
      name, sample_rate, ds->num_shards(),
      [&](size_t s) -> const shards::ShardReader& { return ds->shard(s); },
      [](uint64_t) { return true; }, clip);
}

// The babble pool's record ids among `total`: pool_size of them evenly spaced, so that the pool
// spans the whole dataset (its shards, hence its speakers and sessions) whatever its order, and is
// the same for every seed, epoch and rank.
std::vector<uint64_t> BabblePoolIds(uint64_t total, uint64_t pool_size) {
  std::vector<uint64_t> ids;
  const uint64_t k = std::min(total, pool_size);
  for (uint64_t i = 0; i < k; ++i)
    ids.push_back(static_cast<uint64_t>((static_cast<unsigned __int128>(i) * total) / k));
  return ids;
}

// The babble pool: from babble_data when given, else from the training data itself, whose
// record ids the clips keep so that a record never babbles over itself.
Status LoadBabble(const LoaderOptions& o, const Sources& data, int sample_rate,
                  const std::function<bool(uint64_t)>& in_epochs, features::WaveformSources* clips,
                  AugmentSources* out) {
  const auto pool_size = static_cast<uint64_t>(o.waveform_augment.babble.pool_size);
  auto add = [&](std::string_view, uint64_t, const std::vector<float>& x) {
    clips->babble.push_back(x);
    out->bytes += x.size() * sizeof(float);
    return Status::OK();
  };
  if (!o.babble_data.empty()) {
    const std::string name = "babble_data " + storage::RedactUrl(o.babble_data);
    std::unique_ptr<shards::Dataset> ds;
    SLUICE_RETURN_IF_ERROR(
        OpenClips(name, o.babble_data, o, sample_rate, &ds, &out->babble_content));
    const std::vector<uint64_t> ids = BabblePoolIds(ds->num_records(), pool_size);
    SLUICE_RETURN_IF_ERROR(DecodeClips(
        name, sample_rate, ds->num_shards(),
        [&](size_t s) -> const shards::ShardReader& { return ds->shard(s); },
        [&](uint64_t id) { return std::binary_search(ids.begin(), ids.end(), id); }, add));
    clips->babble_ids.assign(clips->babble.size(), features::kNotATrainingRecord);
    return Status::OK();
  }
  const std::string name = "waveform_augment.babble (the training data " + data.dir() + ")";
  for (size_t s = 0; s < data.size(); ++s)
    if (data.source(s).manifest().stored_segments())
      return Status::InvalidArgument(
          name +
          ": its segments are stored recordings', whose records are not utterances. HINT: "
          "--babble-data DIR, a dataset of utterances");
  // Evenly spaced among the records the epochs hold, so a record that select or filter leaves
  // out (a held-out split of the same dataset) never babbles into training audio.
  std::vector<uint64_t> held;
  uint64_t total = 0;
  for (size_t g = 0; g < data.num_shards(); ++g) total += data.shard(g).num_records();
  for (uint64_t id = 0; id < total; ++id)
    if (in_epochs(id)) held.push_back(id);
  std::vector<uint64_t> ids = BabblePoolIds(held.size(), pool_size);
  for (uint64_t& id : ids) id = held[id];
  for (size_t s = 0; s < data.size(); ++s) {
    if (!out->babble_content.empty()) out->babble_content += '+';
    out->babble_content +=
        shards::ChecksumHex(shards::ManifestFingerprint(data.source(s).manifest()));
  }
  // The shards in the loader's order (Sources), hence the ids the plan gives the records.
  return DecodeClips(
      name, sample_rate, data.num_shards(),
      [&](size_t g) -> const shards::ShardReader& { return data.shard(g); },
      [&](uint64_t id) { return std::binary_search(ids.begin(), ids.end(), id); },
      [&](std::string_view where, uint64_t id, const std::vector<float>& x) {
        clips->babble_ids.push_back(id);
        return add(where, id, x);
      });
}

}  // namespace

Status LoadAugmentSources(const LoaderOptions& o, const Sources& data, int sample_rate,
                          const std::function<bool(uint64_t)>& in_epochs, AugmentSources* out) {
  *out = AugmentSources();
  const features::WaveformAugmentOptions& w = o.waveform_augment;
  const bool noise = w.noise.probability > 0, reverb = w.reverb.probability > 0;
  if (noise && o.noise_data.empty())
    return Status::InvalidArgument(
        "waveform_augment.noise.probability is above 0 but no noise_data is given. HINT: "
        "--noise-data DIR (a dataset of noise clips made by shardify audio)");
  if (reverb && o.rir_data.empty())
    return Status::InvalidArgument(
        "waveform_augment.reverb.probability is above 0 but no rir_data is given. HINT: "
        "--rir-data DIR (a dataset of room impulse responses made by shardify audio)");
  if (!noise && !o.noise_data.empty())
    return Status::InvalidArgument(
        "noise_data is given but waveform_augment.noise.probability is 0, so no noise would be "
        "added. HINT: --noise-prob P, or leave out --noise-data");
  if (!reverb && !o.rir_data.empty())
    return Status::InvalidArgument(
        "rir_data is given but waveform_augment.reverb.probability is 0, so no response would "
        "be used. HINT: --reverb-prob P, or leave out --rir-data");
  if (w.babble.probability <= 0 && !o.babble_data.empty())
    return Status::InvalidArgument(
        "babble_data is given but waveform_augment.babble.probability is 0, so no utterance "
        "would be mixed in. HINT: --babble-prob P, or leave out --babble-data");
  if (!features::WaveformAugmentEnabled(w)) return Status::OK();
  auto clips = std::make_shared<features::WaveformSources>();
  if (noise) {
    SLUICE_RETURN_IF_ERROR(
        ForEachClip("noise_data", o.noise_data, o, sample_rate, &out->noise_content,
                    [&](const std::string&, uint64_t, const std::vector<float>& x) {
                      clips->noise.push_back(x);
                      out->bytes += x.size() * sizeof(float);
                      return Status::OK();
                    }));
  }
  if (reverb) {
    SLUICE_RETURN_IF_ERROR(ForEachClip(
        "rir_data", o.rir_data, o, sample_rate, &out->rir_content,
        [&](const std::string& where, uint64_t, const std::vector<float>& x) {
          clips->rirs.emplace_back();
          SLUICE_RETURN_IF_ERROR(Prefixed(
              features::PrepareImpulseResponse(x.data(), x.size(), &clips->rirs.back()), where));
          out->bytes += clips->rirs.back().spectrum.size() * sizeof(float);
          return Status::OK();
        }));
  }
  if (w.babble.probability > 0)
    SLUICE_RETURN_IF_ERROR(LoadBabble(o, data, sample_rate, in_epochs, clips.get(), out));
  if (o.memory_budget > 0 && out->bytes > o.memory_budget)
    return Status::InvalidArgument(
        "the augmentation clips (noise_data, rir_data, the babble pool) take " +
        std::to_string(out->bytes) + " bytes in memory, over memory_budget " +
        std::to_string(o.memory_budget) +
        ". HINT: raise memory_budget, or use fewer or shorter clips (--babble-pool)");
  out->clips = std::move(clips);
  return Status::OK();
}

}  // namespace sluice::loader
