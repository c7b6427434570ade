#include "importers/shar.h"

#include <algorithm>
#include <filesystem>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "importers/lhotse.h"
#include "importers/tar_reader.h"
#include "importers/text_lines.h"

namespace sluice::importers {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

struct Shard {
  std::string cuts, tar;
};

class Shar : public Importer {
 public:
  Shar(std::vector<Shard> shards, ImportOptions opt)
      : shards_(std::move(shards)), opt_(std::move(opt)) {}

  bool Next(ImportItem* item, Status* status) override {
    std::string line;
    while (true) {
      if (!cuts_) {
        if (next_ >= shards_.size()) return false;
        *status = TextLines::Open(shards_[next_].cuts, &cuts_);
        if (status->ok()) *status = TarReader::Open(shards_[next_].tar, &tar_);
        if (!status->ok()) return false;
        line_ = 0;
      }
      if (cuts_->Next(&line, status)) break;
      if (!status->ok()) return false;
      cuts_.reset();
      tar_.reset();
      ++next_;
    }
    const Shard& shard = shards_[next_];
    *item = ImportItem();
    item->source = shard.cuts;
    item->line = ++line_;
    item->input = line;
    // The cut as a cuts manifest holds it, its source a stand-in file: the shared checks.
    json j = json::parse(line, nullptr, false);
    std::string id;
    if (j.is_object() && j.contains("id") && j["id"].is_string()) id = j["id"];
    if (j.is_object() && j.contains("recording") && j["recording"].is_object()) {
      json& rec = j["recording"];
      if (rec.contains("sources") && rec["sources"].is_array() && rec["sources"].size() == 1 &&
          rec["sources"][0].is_object() && rec["sources"][0].value("type", "") == "shar") {
        rec["sources"][0]["type"] = "file";
        rec["sources"][0]["source"] = "shar";
      }
    }
    ParseLhotseCut(j.is_discarded() ? line : j.dump(), opt_, item);
    // The member holds the cut's audio as lhotse wrote it: its channels are already the cut's.
    item->channels.clear();
    // Its members, read whatever the cut's fate, so the tar stays in step.
    TarMember audio, meta;
    if (id.empty()) {
      if (item->reason.empty()) item->reason = "cut without an id";
      *status = Status::Corruption(shard.cuts + " line " + std::to_string(line_) +
                                   ": a cut without an id, so " + shard.tar +
                                   " cannot be matched with it");
      return false;
    }
    if (!ReadMember(id, &audio, status) || !ReadMember(id, &meta, status)) return false;
    if (!item->reason.empty()) return true;
    const std::string ext = audio.name.substr(id.size() + 1);
    if (audio.too_large) {
      *item = ImportItem{
          item->source, item->line, item->input,
          "cut \"" + id + "\": audio member \"" + audio.name + "\" is over the 2 GiB limit"};
      return true;
    }
    if (ext == "nodata") {
      *item = ImportItem{
          item->source, item->line, item->input,
          "cut \"" + id + "\" is stored without audio (" + shard.tar + ": \"" + audio.name + "\")"};
      return true;
    }
    item->audio_path.clear();
    item->base_dir.clear();
    item->audio_bytes = std::move(audio.data);
    item->audio_name = shard.tar + ":" + audio.name;
    // The member holds the cut's span already.
    item->offset_seconds = 0;
    item->duration_seconds = -1;
    if (item->audio_bytes.empty())
      *item = ImportItem{item->source, item->line, item->input,
                         "cut \"" + id + "\": empty audio member \"" + audio.name + "\""};
    return true;
  }

 private:
  // The next member, which must belong to cut `id`.
  bool ReadMember(const std::string& id, TarMember* m, Status* status) {
    const std::string& tar = shards_[next_].tar;
    if (!tar_->Next(m, status)) {
      if (status->ok())
        *status = Status::Corruption(tar + " ends before the members of cut \"" + id +
                                     "\": it is out of step with " + shards_[next_].cuts);
      return false;
    }
    if (m->name.compare(0, id.size() + 1, id + ".") != 0 || !m->regular) {
      *status = Status::Corruption(tar + ": member \"" + m->name + "\" where cut \"" + id +
                                   "\"'s were expected: the tar is out of step with " +
                                   shards_[next_].cuts);
      return false;
    }
    return true;
  }

  std::vector<Shard> shards_;
  ImportOptions opt_;
  size_t next_ = 0;
  std::unique_ptr<TextLines> cuts_;
  std::unique_ptr<TarReader> tar_;
  uint64_t line_ = 0;
};

}  // namespace

Status OpenShar(const std::string& dir, const ImportOptions& opt, std::unique_ptr<Importer>* out) {
  std::vector<Shard> shards;
  std::error_code ec;
  for (const auto& de : fs::directory_iterator(dir, ec)) {
    const std::string name = de.path().filename().string();
    if (name.rfind("cuts.", 0) != 0) continue;
    size_t end = name.find(".jsonl");
    if (end == std::string::npos) continue;
    const std::string number = name.substr(5, end - 5);
    shards.push_back({de.path().string(), dir + "/recording." + number + ".tar"});
  }
  if (ec) return Status::NotFound(dir + ": " + ec.message());
  if (shards.empty())
    return Status::NotFound(dir +
                            ": no cuts.NNNNNN.jsonl.gz: not a Lhotse Shar directory. HINT: "
                            "CutSet.to_shar(DIR, fields={\"recording\": \"flac\"}) writes one");
  std::sort(shards.begin(), shards.end(),
            [](const Shard& a, const Shard& b) { return a.cuts < b.cuts; });
  for (const Shard& s : shards)
    if (!fs::is_regular_file(s.tar, ec))
      return Status::InvalidArgument(s.cuts + " has no " + s.tar +
                                     ": sluice reads Shar directories written with "
                                     "fields={\"recording\": ...}");
  *out = std::make_unique<Shar>(std::move(shards), opt);
  return Status::OK();
}

}  // namespace sluice::importers
