#include "trainer/datasets.h"

#include <cstdio>

#include "loader/dataset_tokenizer.h"
#include "shards/checksum.h"
#include "shards/dataset.h"
#include "storage/open.h"
#include "storage/url.h"
#include "trainer/checkpoint.h"
#include "trainer/held_out.h"

namespace sluice::train {
namespace {

// The manifest of the dataset at `location`, read without the block cache (the loader's storage
// has its own; this is one small file).
Status ReadManifest(const std::string& location, const storage::StorageOptions& storage,
                    std::shared_ptr<const shards::Storage>* files, shards::Manifest* m) {
  storage::StorageOptions uncached = storage;
  uncached.cache_dir.clear();
  SLUICE_RETURN_IF_ERROR(storage::OpenStorage(location, uncached, files));
  return shards::LoadManifest(**files, m);
}

}  // namespace

uint64_t DatasetFingerprint(const shards::Manifest& m) { return shards::ManifestFingerprint(m); }

Status ReadDatasetFingerprint(const std::string& location, const storage::StorageOptions& storage,
                              uint64_t* content) {
  std::shared_ptr<const shards::Storage> files;
  shards::Manifest m;
  SLUICE_RETURN_IF_ERROR(ReadManifest(location, storage, &files, &m));
  *content = DatasetFingerprint(m);
  return Status::OK();
}

Status OpenTokenized(const std::string& dir, const storage::StorageOptions& storage,
                     TokenizedDataset* d) {
  d->dir = dir;
  d->name = storage::RedactUrl(dir);
  std::shared_ptr<const shards::Storage> files;
  SLUICE_RETURN_IF_ERROR(ReadManifest(dir, storage, &files, &d->manifest));
  const shards::Manifest& m = d->manifest;
  if (m.kind != "audio")
    return Status::InvalidArgument(d->name + ": a " + m.kind +
                                   " dataset; sluice-train needs audio with transcripts");
  if (m.tokenizer->is_null() || !m.has_field("tokens"))
    return Status::InvalidArgument(
        d->name +
        "/manifest.json: the records carry no token ids, which CTC training needs. "
        "HINT: shardify audio -m MANIFEST.jsonl -o " +
        d->name + " --tokenizer char (or bpe:N, unigram:N, spm:PATH)");
  SLUICE_RETURN_IF_ERROR(loader::LoadDatasetTokenizer(*m.tokenizer, *files, &d->tokenizer));
  if (d->tokenizer->blank_id() < 0) {
    // hf/tiktoken ids are a pretrained LLM's, with no id free for CTC's blank.
    return Status::InvalidArgument(
        d->name + "/manifest.json: the tokenizer is " + std::string(d->tokenizer->type()) +
        ", whose ids are the file's own with no CTC blank. HINT: shardify audio ... --tokenizer "
        "char (or bpe:N, unigram:N, spm:PATH) for CTC training");
  }
  d->fingerprint = TokenizerFingerprint(*m.tokenizer);
  d->content = DatasetFingerprint(m);
  return Status::OK();
}

Status MakeLoaderOptions(const TrainOptions& o, bool training, const Ranks& ranks,
                         loader::LoaderOptions* lo) {
  SLUICE_RETURN_IF_ERROR(TrainLoaderOptions(o, training, lo));
  lo->rank = ranks.rank;
  lo->world = ranks.world;
  // --eval-fraction: the held-out records are out of the training loader's plan and make up the
  // evaluation loader's, so neither decodes the other's records (both still read the blocks: a
  // key hash spreads the held-out records over nearly all of them).
  const double fraction = o.eval_dataset.empty() ? o.eval_fraction : 0.0;
  if (fraction > 0) {
    if (training)
      lo->select = [fraction](std::string_view key) { return !IsHeldOut(key, fraction); };
    else
      lo->select = [fraction](std::string_view key) { return IsHeldOut(key, fraction); };
  }
  return Status::OK();
}

Status TrainMixture(const TrainOptions& o, loader::MixOptions* mix) {
  if (o.dataset.empty() == o.data.empty())
    return Status::InvalidArgument(
        "give a DATASET directory or --data DIR:WEIGHT (repeated) for a weighted mixture, not " +
        std::string(o.dataset.empty() ? "neither" : "both"));
  mix->sources.clear();
  mix->epoch_records = o.mix_records;
  if (o.data.empty()) {
    if (o.mix_records != 0)
      return Status::InvalidArgument("--mix-records " + std::to_string(o.mix_records) +
                                     ": without --data there is no mixture. HINT: --data " +
                                     storage::RedactUrl(o.dataset) + ":1 --mix-records N");
    mix->sources.push_back({o.dataset, 1.0});
    return Status::OK();
  }
  for (const std::string& spec : o.data) {
    loader::MixSource s;
    SLUICE_RETURN_IF_ERROR(loader::ParseMixSource(spec, &s));
    mix->sources.push_back(std::move(s));
  }
  return Status::OK();
}

Status CheckHeldOut(const std::string& dir, const storage::StorageOptions& storage, double fraction,
                    uint64_t* held_out) {
  // The keys are in the shards' indexes: through the block cache, where the loader finds them.
  std::unique_ptr<shards::Dataset> ds;
  SLUICE_RETURN_IF_ERROR(storage::OpenDataset(dir, storage, shards::ReadOptions(), &ds));
  uint64_t total = 0, held = 0;
  for (size_t s = 0; s < ds->num_shards(); ++s)
    for (size_t i = 0; i < ds->shard(s).num_records(); ++i, ++total)
      held += IsHeldOut(ds->shard(s).key(i), fraction);
  if (held_out != nullptr) *held_out = held;
  if (held == 0 || held == total) {
    char f[32];
    std::snprintf(f, sizeof f, "%g", fraction);
    return Status::InvalidArgument("--eval-fraction " + std::string(f) + " holds out " +
                                   (held ? "all" : "none") + " of " + storage::RedactUrl(dir) +
                                   "'s " + std::to_string(total) +
                                   " records. HINT: another fraction, a separate --eval DIR, or "
                                   "--eval-fraction 0 for no evaluation");
  }
  return Status::OK();
}

}  // namespace sluice::train
