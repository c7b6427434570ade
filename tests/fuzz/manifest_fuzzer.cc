// libFuzzer target for manifest.json (shards/manifest.h): the bytes of the file, parsed as
// LoadManifest parses them (JSON text, then ManifestFromJson), must give a Status, never a crash;
// a manifest that parses must survive ManifestToJson -> ManifestFromJson unchanged. Then what the
// loader reads from it when it opens the dataset: the feature extractor (kind, rate, codec, the
// "features" object of precomputed features) and the "tokenizer" description.
// Seeds: corpus/manifest (tests/fuzz/make_seeds.cc).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "features/tokenizer.h"
#include "loader/dataset_tokenizer.h"
#include "loader/feature_extractor.h"
#include "loader/options.h"
#include "shards/manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice::shards;
  const nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, false);
  if (j.is_discarded()) return 0;
  Manifest m;
  if (!ManifestFromJson(j, "fuzz/manifest.json", &m).ok()) return 0;
  (void)m.seconds();
  (void)m.bytes();
  (void)m.raw_bytes();
  (void)m.duration();
  (void)m.has_field("audio");
  // What SaveManifest writes, read back, is the same manifest.
  const std::string saved = ManifestToJson(m).dump(2);
  Manifest again;
  if (!ManifestFromJson(nlohmann::json::parse(saved), "fuzz/saved.json", &again).ok() ||
      ManifestToJson(again).dump(2) != saved) {
    std::abort();
  }
  std::unique_ptr<sluice::loader::FeatureExtractor> fx;
  (void)sluice::loader::FeatureExtractor::Create(m, sluice::loader::LoaderOptions{}, &fx);
  if (!m.tokenizer->is_null()) {
    // A "sentencepiece" description names a model file: the directory does not exist, so that
    // branch ends at NotFound (sentencepiece_fuzzer covers model bytes).
    std::unique_ptr<sluice::features::Tokenizer> t;
    (void)sluice::loader::LoadDatasetTokenizer(*m.tokenizer, "/nonexistent/fuzz-dataset", &t);
  }
  return 0;
}
