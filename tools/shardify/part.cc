#include "part.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>

#include "base/file.h"
#include "shards/checksum.h"
#include "shards/manifest.h"

namespace sluice::shardify {
namespace fs = std::filesystem;

namespace {

// A non-negative integer, the whole string.
bool ParseIndex(const char* text, uint64_t* v) {
  if (!text || !*text) return false;
  char extra = 0;
  unsigned long long x = 0;
  if (std::sscanf(text, "%llu%c", &x, &extra) != 1 || text[0] == '-' || text[0] == '+')
    return false;
  *v = x;
  return true;
}

// What an incomplete part directory shows of itself, for merge's error message.
std::string DescribeIncomplete(const std::string& dir, const Status& marker_status,
                               std::string* journal_part) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return "does not exist";
  if (!marker_status.IsNotFound()) return marker_status.message();
  *journal_part = JournalPart(dir);
  std::string why = "no part.json: interrupted, failed or still running";
  if (!journal_part->empty()) why += "; its journal is part " + *journal_part;
  return why;
}

// The options that must agree between parts: all but the part itself.
nlohmann::json SharedOptions(const PartMarker& m) {
  nlohmann::json o = m.options;
  if (o.is_object()) o.erase("part");
  return o;
}

}  // namespace

std::string JournalPart(const std::string& dir) {
  std::unique_ptr<LineReader> in;
  std::string line;
  Status st;
  if (!LineReader::Open(dir + "/" + kJournalName, &in).ok() || !in->Next(&line, &st)) return "";
  nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_object() && j.contains("fingerprint") && j["fingerprint"].is_object() &&
      j["fingerprint"].contains("part") && j["fingerprint"]["part"].is_string())
    return j["fingerprint"]["part"].get<std::string>();
  return "";
}

Status ParsePart(const std::string& spec, uint32_t* part, uint32_t* parts) {
  unsigned a = 0, b = 0;
  char extra = 0;
  if (std::sscanf(spec.c_str(), "%u/%u%c", &a, &b, &extra) != 2 || b == 0 || a >= b) {
    return Status::InvalidArgument("--part '" + spec + "': expected i/N with 0 <= i < N, e.g. 0/8");
  }
  *part = a;
  *parts = b;
  return Status::OK();
}

std::string PartSpec(uint32_t part, uint32_t parts) {
  return std::to_string(part) + "/" + std::to_string(parts);
}

nlohmann::json PartMarkerToJson(const PartMarker& m) {
  return {{"part_marker", kPartMarkerVersion},
          {"part", m.part},
          {"parts", m.parts},
          {"items", {m.first_item, m.end_item}},
          {"input_items", m.input_items},
          {"input_xxh3", m.input_xxh3},
          {"options", m.options},
          {"writer", m.writer},
          {"records", m.records},
          {"rejected", m.rejected},
          {"manifest_xxh3", m.manifest_xxh3},
          {"created_by", m.created_by}};
}

Status PartMarkerFromJson(const nlohmann::json& j, const std::string& where, PartMarker* m) {
  try {
    const int version = j.at("part_marker").get<int>();
    if (version != kPartMarkerVersion) {
      return Status::Corruption(where + ": part marker version " + std::to_string(version) +
                                ", this shardify reads " + std::to_string(kPartMarkerVersion));
    }
    m->part = j.at("part").get<uint32_t>();
    m->parts = j.at("parts").get<uint32_t>();
    m->first_item = j.at("items").at(0).get<uint64_t>();
    m->end_item = j.at("items").at(1).get<uint64_t>();
    m->input_items = j.at("input_items").get<uint64_t>();
    m->input_xxh3 = j.at("input_xxh3").get<std::string>();
    m->options = j.at("options");
    m->writer = j.at("writer");
    m->records = j.at("records").get<uint64_t>();
    m->rejected = j.at("rejected").get<uint64_t>();
    m->manifest_xxh3 = j.at("manifest_xxh3").get<std::string>();
    m->created_by = j.at("created_by").get<std::string>();
  } catch (const std::exception& e) {
    return Status::Corruption(where + ": not a part marker: " + e.what());
  }
  if (m->parts == 0 || m->part >= m->parts || m->first_item > m->end_item ||
      m->end_item > m->input_items) {
    return Status::Corruption(where + ": part " + PartSpec(m->part, m->parts) + " with items [" +
                              std::to_string(m->first_item) + ", " + std::to_string(m->end_item) +
                              ") of " + std::to_string(m->input_items) + " is inconsistent");
  }
  return Status::OK();
}

Status WritePartMarker(const std::string& dir, const PartMarker& m) {
  return WriteFileAtomic(dir + "/" + kPartMarkerName, PartMarkerToJson(m).dump(2) + "\n");
}

Status LoadPartMarker(const std::string& dir, PartMarker* m) {
  const std::string path = dir + "/" + kPartMarkerName;
  std::error_code ec;
  if (!fs::exists(path, ec)) return Status::NotFound(path + ": no part marker");
  std::string text;
  SLUICE_RETURN_IF_ERROR(ReadFileToString(path, &text));
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return Status::Corruption(path + ": not valid JSON");
  SLUICE_RETURN_IF_ERROR(PartMarkerFromJson(j, path, m));
  // The manifest it vouches for must be the one in the directory: a later run that rewrote
  // the directory without finishing leaves a marker that no longer describes it.
  std::string manifest;
  Status st = ReadFileToString(dir + "/" + shards::kManifestName, &manifest);
  if (st.IsIOError()) return st;  // the disk's fault, not the part's
  if (!st.ok())
    return Status::Corruption(path + ": its manifest.json is unreadable: " + st.message());
  const std::string sum = shards::ChecksumHex(shards::Checksum(manifest.data(), manifest.size()));
  if (sum != m->manifest_xxh3) {
    return Status::Corruption(path + ": manifest.json has XXH3 " + sum + ", the marker says " +
                              m->manifest_xxh3 + " (rewritten after the part completed)");
  }
  return Status::OK();
}

Status ResolvePart(const std::string& spec, const EnvFn& env, uint32_t* part, uint32_t* parts) {
  const bool automatic = spec == "auto" || spec.rfind("auto/", 0) == 0;
  if (!automatic) return ParsePart(spec, part, parts);
  auto var = [&](const char* name) -> std::string {
    const char* v = env(name);
    return v ? std::string(name) + "=" + v : std::string(name) + " unset";
  };
  uint64_t id = 0;
  if (!ParseIndex(env("SLURM_ARRAY_TASK_ID"), &id)) {
    return Status::InvalidArgument(
        "--part " + spec + ": needs SLURM_ARRAY_TASK_ID (" + var("SLURM_ARRAY_TASK_ID") +
        "). HINT: run it as a task of a Slurm array job (sbatch --array=0-15), or give --part i/N");
  }
  if (spec != "auto") {
    uint64_t n = 0;
    if (!ParseIndex(spec.c_str() + 5, &n) || n == 0 || n > UINT32_MAX) {
      return Status::InvalidArgument("--part '" + spec + "': expected auto/N with N > 0");
    }
    if (id >= n) {
      return Status::InvalidArgument("--part " + spec +
                                     ": SLURM_ARRAY_TASK_ID=" + std::to_string(id) +
                                     " is not a part of 0.." + std::to_string(n - 1) +
                                     ". HINT: with auto/N, array ids are the 0-based part numbers");
    }
    *part = static_cast<uint32_t>(id);
    *parts = static_cast<uint32_t>(n);
    return Status::OK();
  }
  uint64_t count = 0, min = 0, max = 0;
  if (!ParseIndex(env("SLURM_ARRAY_TASK_COUNT"), &count) || count == 0) {
    return Status::InvalidArgument("--part auto: needs SLURM_ARRAY_TASK_COUNT > 0 (" +
                                   var("SLURM_ARRAY_TASK_COUNT") +
                                   "). HINT: give the number of parts with --part auto/N");
  }
  const bool has_min = env("SLURM_ARRAY_TASK_MIN") != nullptr;
  if (has_min && !ParseIndex(env("SLURM_ARRAY_TASK_MIN"), &min)) {
    return Status::InvalidArgument("--part auto: " + var("SLURM_ARRAY_TASK_MIN") +
                                   " is not a task id");
  }
  // Without MAX, a contiguous range MIN..MIN+COUNT-1 is assumed.
  max = min + count - 1;
  if (env("SLURM_ARRAY_TASK_MAX") && !ParseIndex(env("SLURM_ARRAY_TASK_MAX"), &max)) {
    return Status::InvalidArgument("--part auto: " + var("SLURM_ARRAY_TASK_MAX") +
                                   " is not a task id");
  }
  const std::string vars = var("SLURM_ARRAY_TASK_ID") + ", " + var("SLURM_ARRAY_TASK_COUNT") +
                           ", " + var("SLURM_ARRAY_TASK_MIN") + ", " + var("SLURM_ARRAY_TASK_MAX");
  // A list or a step (--array=3,7 or 0-15:2) has COUNT smaller than its range: the part count
  // is then not knowable from the environment.
  if (max < min || max - min + 1 != count || id < min || id > max) {
    return Status::InvalidArgument(
        "--part auto: the array is not one contiguous range of ids (" + vars +
        "), so the number of parts is unknown. HINT: give it: --part auto/N, with array ids "
        "0..N-1 (as when rerunning some parts with sbatch --array=3,7)");
  }
  *part = static_cast<uint32_t>(id - min);
  *parts = static_cast<uint32_t>(count);
  return Status::OK();
}

Status CollectParts(const std::vector<std::string>& dirs, std::vector<CompletePart>* out) {
  out->clear();
  std::vector<CompletePart> complete;
  std::vector<std::pair<std::string, std::string>> incomplete;  // dir, why
  for (const auto& dir : dirs) {
    CompletePart p{dir, {}};
    Status st = LoadPartMarker(dir, &p.marker);
    if (st.ok()) {
      complete.push_back(std::move(p));
      continue;
    }
    // A read error says nothing of whether the part is complete: calling it incomplete would
    // send the user to recompute a part that is fine.
    if (st.IsIOError()) return st;
    std::string journal_part;
    incomplete.emplace_back(dir, DescribeIncomplete(dir, st, &journal_part));
  }
  if (complete.empty()) {
    std::string list;
    for (const auto& [dir, why] : incomplete)
      list += (list.empty() ? "" : ", ") + dir + " (" + why + ")";
    return Status::InvalidArgument("no complete part among " + std::to_string(dirs.size()) +
                                   " directories: " + list +
                                   ". HINT: a part is complete once shardify wrote its part.json");
  }
  const PartMarker& first = complete[0].marker;
  std::map<uint32_t, std::string> by_index;
  for (const auto& p : complete) {
    const PartMarker& m = p.marker;
    const std::string what = p.dir + " (part " + PartSpec(m.part, m.parts) + ")";
    auto differs = [&](const std::string& field, const std::string& a, const std::string& b) {
      return Status::InvalidArgument(what + ": " + field + " " + b + " differs from " +
                                     complete[0].dir + "'s " + a +
                                     ". HINT: every part must come from one input and one set "
                                     "of options; rerun the odd part with the others' command");
    };
    if (m.parts != first.parts)
      return differs("part count", std::to_string(first.parts), std::to_string(m.parts));
    if (m.input_xxh3 != first.input_xxh3 || m.input_items != first.input_items) {
      return differs("input (items, XXH3)",
                     std::to_string(first.input_items) + ", " + first.input_xxh3,
                     std::to_string(m.input_items) + ", " + m.input_xxh3);
    }
    if (SharedOptions(m) != SharedOptions(first))
      return differs("options", SharedOptions(first).dump(), SharedOptions(m).dump());
    auto [it, inserted] = by_index.emplace(m.part, p.dir);
    if (!inserted) {
      return Status::InvalidArgument("part " + PartSpec(m.part, m.parts) + " is in both " +
                                     it->second + " and " + p.dir +
                                     ". HINT: give each part's directory once");
    }
  }
  std::vector<uint32_t> missing;
  for (uint32_t i = 0; i < first.parts; ++i)
    if (!by_index.count(i)) missing.push_back(i);
  if (!missing.empty() || !incomplete.empty()) {
    std::string msg = missing.empty() ? "" : (missing.size() == 1 ? "part " : "parts ");
    for (size_t k = 0; k < missing.size(); ++k) {
      if (k >= 32) {
        msg += ", ... (" + std::to_string(missing.size()) + " in all)";
        break;
      }
      msg += (k ? ", " : "") + std::to_string(missing[k]);
    }
    if (!missing.empty()) msg += " of " + std::to_string(first.parts) + " missing or incomplete";
    else msg += "every part is complete, but some directories are not";
    if (!incomplete.empty()) {
      msg += ": ";
      for (size_t k = 0; k < incomplete.size(); ++k)
        msg += (k ? ", " : "") + incomplete[k].first + " (" + incomplete[k].second + ")";
    }
    if (!missing.empty()) {
      std::string ids;
      for (size_t k = 0; k < missing.size() && k < 32; ++k)
        ids += (k ? "," : "") + std::to_string(missing[k]);
      msg += ". HINT: rerun only those parts (Slurm: sbatch --array=" + ids + " with --part auto/" +
             std::to_string(first.parts) + "), then merge again";
    } else {
      msg += ". HINT: remove the stray directories or list only the parts";
    }
    return Status::InvalidArgument(msg);
  }
  for (const auto& [i, dir] : by_index) {
    for (auto& p : complete)
      if (p.dir == dir) out->push_back(std::move(p));
  }
  return Status::OK();
}

Status ListPartDirs(const std::string& parent, std::vector<std::string>* dirs) {
  std::error_code ec;
  if (!fs::is_directory(parent, ec))
    return Status::NotFound(parent + ": --parts-dir is not a directory");
  std::vector<std::pair<uint64_t, std::string>> numeric;
  std::vector<std::string> named;
  for (const auto& de : fs::directory_iterator(parent, ec)) {
    if (!de.is_directory()) continue;
    const std::string name = de.path().filename().string();
    uint64_t v = 0;
    if (ParseIndex(name.c_str(), &v)) numeric.emplace_back(v, de.path().string());
    else named.push_back(de.path().string());
  }
  if (ec) return Status::IOError(parent + ": " + ec.message());
  std::sort(numeric.begin(), numeric.end());
  std::sort(named.begin(), named.end());
  dirs->clear();
  for (auto& [v, d] : numeric) dirs->push_back(d);
  for (auto& d : named) dirs->push_back(d);
  if (dirs->empty()) return Status::NotFound(parent + ": no part directories in it");
  return Status::OK();
}

}  // namespace sluice::shardify
