// libFuzzer target for manifest.json (shards/manifest.h): the bytes of the file, parsed as
// LoadManifest parses them (JSON text, then ManifestFromJson), must give a Status, never a crash;
// a manifest that parses must survive ManifestToJson -> ManifestFromJson unchanged.
// Seeds: corpus/manifest (tests/fuzz/make_seeds.cc).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

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
  return 0;
}
