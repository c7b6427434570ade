#include "shards/manifest.h"

#include <algorithm>
#include <cstdlib>
#include <initializer_list>
#include <nlohmann/json.hpp>

#include "base/file.h"
#include "shards/checksum.h"

namespace sluice::shards {
namespace {

// nlohmann's get<integer>() casts a float with static_cast, undefined behaviour beyond the
// type's range ("records": 1e98 in manifest_fuzzer under UBSan): counts must be integers.
Status CheckIntegers(const nlohmann::json& j, std::initializer_list<const char*> keys,
                     const std::string& where) {
  for (const char* key : keys) {
    auto it = j.find(key);
    if (it != j.end() && it->is_number_float())
      return Status::Corruption(where + ": \"" + key + "\" must be an integer, not " + it->dump());
  }
  return Status::OK();
}

// A checksum as manifest.json writes it (ChecksumHex): 16 hex digits.
Status ParseHex64(const std::string& hex, const char* key, const std::string& where,
                  const std::string& file, uint64_t* v) {
  char* end = nullptr;
  *v = std::strtoull(hex.c_str(), &end, 16);
  if (hex.size() != 16 || *end != '\0')
    return Status::Corruption(where + ": bad " + key + " '" + hex + "' for " + file);
  return Status::OK();
}

// The error for a location without manifest.json: what it is instead. A file or a missing path
// says so; a directory that shardify's journal or lock shows an unfinished run in is to be
// resumed; any other directory never was shardify's output, and --resume would not help it.
Status NoManifest(const Storage& storage, const std::string& path) {
  SLUICE_RETURN_IF_ERROR(storage.CheckIsDirectory());
  std::string unused;
  for (const char* mark : {kShardifyJournalName, kShardifyLockName})
    if (storage.ReadFile(mark, &unused).ok())
      return Status::NotFound(path + ": no manifest: shardify did not finish writing this " +
                              "dataset (" + mark + " is there). HINT: re-run the same shardify " +
                              "command with --resume, or wait for the run writing it to finish");
  return Status::NotFound(storage.location() + ": not a dataset directory: no " + path +
                          ", and shardify never wrote here (no journal of an unfinished run). " +
                          "HINT: give the directory shardify audio|text wrote (its --out)");
}

}  // namespace

double Manifest::seconds() const {
  return sample_rate > 0 ? static_cast<double>(duration()) / sample_rate : 0.0;
}

uint64_t Manifest::bytes() const {
  uint64_t n = 0;
  for (const auto& s : shards) n += s.bytes;
  return n;
}

uint64_t Manifest::raw_bytes() const {
  uint64_t n = 0;
  for (const auto& s : shards) n += s.raw_bytes;
  return n;
}

uint64_t Manifest::duration() const {
  uint64_t n = 0;
  for (const auto& s : shards) n += s.duration;
  return n;
}

bool Manifest::has_field(const std::string& name) const {
  return std::find(fields.begin(), fields.end(), name) != fields.end();
}

nlohmann::json ShardEntryToJson(const ShardEntry& e) {
  nlohmann::json j = {{"file", e.file},
                      {"records", e.records},
                      {"bytes", e.bytes},
                      {"raw_bytes", e.raw_bytes},
                      {"duration", e.duration},
                      {"tokens", e.tokens},
                      {"xxh3", ChecksumHex(e.xxh3)}};
  if (e.footer_xxh3) j["footer_xxh3"] = ChecksumHex(*e.footer_xxh3);
  return j;
}

Status ShardEntryFromJson(const nlohmann::json& s, const std::string& where, ShardEntry* e) {
  if (s.is_object())
    SLUICE_RETURN_IF_ERROR(
        CheckIntegers(s, {"records", "bytes", "raw_bytes", "duration", "tokens"}, where));
  try {
    e->file = s.at("file").get<std::string>();
    if (e->file.empty() || e->file.find('/') != std::string::npos) {
      return Status::Corruption(where + ": shard file name '" + e->file +
                                "' must be a plain name in the directory");
    }
    e->records = s.at("records").get<uint64_t>();
    e->bytes = s.at("bytes").get<uint64_t>();
    e->raw_bytes = s.value("raw_bytes", uint64_t{0});
    e->duration = s.at("duration").get<uint64_t>();
    e->tokens = s.value("tokens", uint64_t{0});
    SLUICE_RETURN_IF_ERROR(
        ParseHex64(s.at("xxh3").get<std::string>(), "xxh3", where, e->file, &e->xxh3));
    e->footer_xxh3.reset();
    if (s.contains("footer_xxh3")) {
      uint64_t footer = 0;
      SLUICE_RETURN_IF_ERROR(ParseHex64(s.at("footer_xxh3").get<std::string>(), "footer_xxh3",
                                        where, e->file, &footer));
      e->footer_xxh3 = footer;
    }
  } catch (const nlohmann::json::exception& ex) {
    return Status::Corruption(where + ": " + ex.what());
  }
  return Status::OK();
}

nlohmann::json ManifestToJson(const Manifest& m) {
  nlohmann::json j;
  j["format"] = "sluice-dataset";
  j["version"] = m.version;
  j["kind"] = m.kind;
  j["sample_rate"] = m.sample_rate;
  j["codec"] = m.codec;
  j["fields"] = m.fields;
  if (!m.columns.empty()) {
    nlohmann::json cols = nlohmann::json::array();
    for (const ColumnSpec& c : m.columns)
      cols.push_back({{"name", c.name}, {"type", ColumnTypeName(c.type)}});
    j["columns"] = cols;
  }
  // Only when stored, so that the manifests (and fingerprints) of other datasets keep their bytes.
  if (!m.segments.empty())
    j["segments"] = {{"layout", m.segments}, {"chunk_samples", m.chunk_samples}};
  j["features"] = *m.features;
  j["tokenizer"] = *m.tokenizer;
  j["records"] = m.records;
  j["rejected"] = m.rejected;
  j["seconds"] = m.seconds();
  j["tokens"] = m.tokens;
  j["bytes"] = m.bytes();
  j["raw_bytes"] = m.raw_bytes();
  nlohmann::json shards = nlohmann::json::array();
  for (const auto& s : m.shards) shards.push_back(ShardEntryToJson(s));
  j["shards"] = shards;
  j["created_by"] = m.created_by;
  j["source"] = *m.source;
  return j;
}

Status ManifestFromJson(const nlohmann::json& j, const std::string& where, Manifest* m) {
  try {
    if (!j.is_object() || j.value("format", "") != "sluice-dataset") {
      return Status::Corruption(
          where + ": not a sluice dataset manifest (no \"format\": \"sluice-dataset\")");
    }
    SLUICE_RETURN_IF_ERROR(CheckIntegers(
        j, {"version", "sample_rate", "records", "rejected", "tokens"}, where));
    m->version = j.at("version").get<int>();
    if (m->version != kManifestVersion) {
      return Status::Unsupported(where + ": manifest version " + std::to_string(m->version) +
                                 ", this build knows version " + std::to_string(kManifestVersion));
    }
    m->kind = j.at("kind").get<std::string>();
    m->sample_rate = j.at("sample_rate").get<int>();
    m->codec = j.at("codec").get<std::string>();
    m->fields = j.at("fields").get<std::vector<std::string>>();
    m->columns.clear();
    if (j.contains("columns")) {
      for (const auto& c : j.at("columns")) {
        ColumnSpec spec;
        spec.name = c.at("name").get<std::string>();
        if (!ParseColumnType(c.at("type").get<std::string>(), &spec.type))
          return Status::Corruption(where + ": column '" + spec.name + "' has type '" +
                                    c.at("type").get<std::string>() +
                                    "'; expected int, float or string");
        m->columns.push_back(std::move(spec));
      }
    }
    m->segments.clear();
    m->chunk_samples = 0;
    if (auto seg = j.find("segments"); seg != j.end()) {
      if (!seg->is_object() || !seg->contains("layout") || !(*seg)["layout"].is_string() ||
          !seg->contains("chunk_samples") || !(*seg)["chunk_samples"].is_number_unsigned())
        return Status::Corruption(where +
                                  ": \"segments\" must be {\"layout\": \"stored\", "
                                  "\"chunk_samples\": N}");
      m->segments = (*seg)["layout"].get<std::string>();
      m->chunk_samples = (*seg)["chunk_samples"].get<uint64_t>();
      if (m->segments != "stored")
        return Status::Unsupported(where + ": segments layout '" + m->segments +
                                   "', this build knows \"stored\". HINT: read the dataset with "
                                   "the sluice that wrote it");
      if (m->chunk_samples == 0)
        return Status::Corruption(where + ": segments: chunk_samples is 0");
    }
    *m->features = j.value("features", nlohmann::json());
    *m->tokenizer = j.value("tokenizer", nlohmann::json());
    m->records = j.at("records").get<uint64_t>();
    m->rejected = j.at("rejected").get<uint64_t>();
    m->tokens = j.value("tokens", uint64_t{0});
    m->created_by = j.value("created_by", "");
    *m->source = j.value("source", nlohmann::json());
    m->shards.clear();
    uint64_t total = 0;
    for (const auto& s : j.at("shards")) {
      ShardEntry e;
      SLUICE_RETURN_IF_ERROR(ShardEntryFromJson(s, where, &e));
      total += e.records;
      m->shards.push_back(std::move(e));
    }
    if (total != m->records) {
      return Status::Corruption(where + ": shards hold " + std::to_string(total) +
                                " records, manifest says " + std::to_string(m->records));
    }
  } catch (const nlohmann::json::exception& e) {
    return Status::Corruption(where + ": " + e.what());
  }
  return Status::OK();
}

Status LoadManifest(const std::string& dir, Manifest* m) {
  return LoadManifest(*NewLocalStorage(dir), m);
}

Status LoadManifest(const Storage& storage, Manifest* m) {
  const std::string path = storage.Where(kManifestName);
  std::string text;
  Status s = storage.ReadFile(kManifestName, &text);
  if (s.IsNotFound()) return NoManifest(storage, path);
  SLUICE_RETURN_IF_ERROR(s);
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::Corruption(path + ": not valid JSON");
  return ManifestFromJson(j, path, m);
}

Status SaveManifest(const std::string& dir, const Manifest& m) {
  return WriteFileAtomic(dir + "/" + kManifestName, ManifestToJson(m).dump(2) + "\n");
}

uint64_t ManifestFingerprint(const Manifest& m) {
  nlohmann::json j = ManifestToJson(m);
  j.erase("created_by");
  j.erase("source");
  const std::string canonical = j.dump();  // nlohmann sorts object keys
  return Checksum(canonical.data(), canonical.size());
}

}  // namespace sluice::shards
