#include "loader/augment_sources.h"

#include <string>
#include <vector>

#include "features/flac.h"
#include "features/pcm.h"
#include "shards/checksum.h"
#include "shards/record.h"
#include "storage/open.h"
#include "storage/url.h"

namespace sluice::loader {
namespace {

// Calls clip(key, samples, n) for every record of the dataset at `location`, samples in [-1, 1].
template <class Clip>
Status ForEachClip(const std::string& option, const std::string& location,
                   const LoaderOptions& options, int sample_rate, std::string* content,
                   Clip&& clip) {
  const std::string name = option + " " + storage::RedactUrl(location);
  std::unique_ptr<shards::Dataset> ds;
  shards::ReadOptions ro;
  ro.verify_checksums = options.verify_checksums;
  SLUICE_RETURN_IF_ERROR(Prefixed(storage::OpenDataset(location, options.storage, ro, &ds), name));
  const shards::Manifest& m = ds->manifest();
  if (m.kind != "audio")
    return Status::InvalidArgument(name + ": a " + m.kind +
                                   " dataset; it must hold audio clips. HINT: shardify audio "
                                   "the clips' manifest");
  if (m.stored_segments())
    return Status::InvalidArgument(name +
                                   ": its segments are stored recordings' (shardify "
                                   "--segments stored); noise and RIR clips are records of their "
                                   "own. HINT: shardify audio the clips without --segments stored");
  if (m.sample_rate != sample_rate)
    return Status::InvalidArgument(name + ": clips at " + std::to_string(m.sample_rate) +
                                   " Hz, the training data is at " + std::to_string(sample_rate) +
                                   " Hz. HINT: shardify audio the clips again with --sample-rate " +
                                   std::to_string(sample_rate));
  if (ds->num_records() == 0) return Status::InvalidArgument(name + ": the dataset has no clips");
  *content = shards::ChecksumHex(shards::ManifestFingerprint(m));
  shards::Buffer scratch, raw;
  std::vector<int16_t> pcm;
  std::vector<float> samples;
  for (size_t si = 0; si < ds->num_shards(); ++si) {
    const shards::ShardReader& shard = ds->shard(si);
    for (size_t b = 0; b < shard.num_blocks(); ++b) {
      SLUICE_RETURN_IF_ERROR(Prefixed(shard.ReadBlock(b, &scratch, &raw), name));
      for (size_t r = shard.first_record(b); r < shard.first_record(b + 1); ++r) {
        const std::string where =
            name + ": " + shard.Where(b) + ": record '" + std::string(shard.key(r)) + "'";
        const std::string_view payload = shard.RecordPayload(r, raw);
        shards::RecordView rv;
        SLUICE_RETURN_IF_ERROR(
            Prefixed(shards::ParseRecord(payload.data(), payload.size(), shard.name(), &rv), name));
        const int16_t* p = nullptr;
        size_t n = 0;
        if (const shards::FieldView* f = rv.Find(shards::FieldType::kAudioPcm16)) {
          p = reinterpret_cast<const int16_t*>(f->data);
          n = f->size / 2;
        } else if (const shards::FieldView* f = rv.Find(shards::FieldType::kAudioFlac)) {
          int rate = 0;
          SLUICE_RETURN_IF_ERROR(features::DecodeFlac(reinterpret_cast<const uint8_t*>(f->data),
                                                      f->size, where, &pcm, &rate));
          p = pcm.data();
          n = pcm.size();
        } else {
          return Status::InvalidArgument(where + ": no audio (shardify --drop-audio?)");
        }
        samples.resize(n);
        features::Pcm16ToFloat(p, n, samples.data(), 1.0f / 32768);
        SLUICE_RETURN_IF_ERROR(clip(where, samples));
      }
    }
  }
  return Status::OK();
}

}  // namespace

Status LoadAugmentSources(const LoaderOptions& o, int sample_rate, AugmentSources* out) {
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
  if (!features::WaveformAugmentEnabled(w)) return Status::OK();
  auto clips = std::make_shared<features::WaveformSources>();
  if (noise) {
    SLUICE_RETURN_IF_ERROR(ForEachClip("noise_data", o.noise_data, o, sample_rate,
                                       &out->noise_content,
                                       [&](const std::string&, const std::vector<float>& x) {
                                         clips->noise.push_back(x);
                                         out->bytes += x.size() * sizeof(float);
                                         return Status::OK();
                                       }));
  }
  if (reverb) {
    SLUICE_RETURN_IF_ERROR(ForEachClip(
        "rir_data", o.rir_data, o, sample_rate, &out->rir_content,
        [&](const std::string& where, const std::vector<float>& x) {
          clips->rirs.emplace_back();
          SLUICE_RETURN_IF_ERROR(Prefixed(
              features::PrepareImpulseResponse(x.data(), x.size(), &clips->rirs.back()), where));
          out->bytes += clips->rirs.back().spectrum.size() * sizeof(float);
          return Status::OK();
        }));
  }
  if (o.memory_budget > 0 && out->bytes > o.memory_budget)
    return Status::InvalidArgument(
        "the augmentation clips (noise_data, rir_data) take " + std::to_string(out->bytes) +
        " bytes in memory, over memory_budget " + std::to_string(o.memory_budget) +
        ". HINT: raise memory_budget, or use fewer or shorter clips");
  out->clips = std::move(clips);
  return Status::OK();
}

}  // namespace sluice::loader
