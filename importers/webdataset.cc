#include "importers/webdataset.h"

#include <algorithm>
#include <set>
#include <unordered_set>
#include <utility>

#include <nlohmann/json.hpp>

#include "importers/tar_reader.h"

namespace sluice::importers {
namespace {

// The member's type: the last part of its extension, in lower case ("seg.WAV" -> "wav"), as
// webdataset's decoders match it.
std::string Type(const std::string& ext) {
  std::string t = ext.substr(ext.rfind('.') + 1);
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
  return t;
}

bool IsAudioExt(const std::string& ext) {
  return ext == "wav" || ext == "flac" || ext == "mp3" || ext == "ogg" || ext == "opus";
}

// webdataset's base_plus_ext: the key is the name up to the first dot of its last component.
void SplitKey(const std::string& name, std::string* key, std::string* ext) {
  const size_t slash = name.rfind('/');
  const size_t base = slash == std::string::npos ? 0 : slash + 1;
  const size_t dot = name.find('.', base);
  if (dot == std::string::npos || dot == base) {
    *key = name;
    ext->clear();
    return;
  }
  *key = name.substr(0, dot);
  *ext = name.substr(dot + 1);
}

struct Member {
  std::string name, ext, data;
};

class TarSamples {
 public:
  TarSamples(std::string name, std::unique_ptr<TarReader> tar)
      : name_(std::move(name)), tar_(std::move(tar)) {}

  // The next sample as an item; false at the end or on an error (*status).
  bool Next(ImportItem* item, Status* status) {
    std::vector<Member> members;
    std::string key;
    std::string why;
    while (true) {
      if (!have_pending_ && !ReadMember(status)) {
        if (!status->ok()) return false;
        break;  // the end of the tar
      }
      if (members.empty() && !pending_skip_.empty()) {
        why = pending_skip_;
        key = pending_.name;
        have_pending_ = false;
        pending_skip_.clear();
        members.push_back(std::move(pending_));
        break;
      }
      if (!pending_skip_.empty()) break;  // ends the current sample; rejected on its own next
      std::string k, ext;
      SplitKey(pending_.name, &k, &ext);
      if (!members.empty() && k != key) break;  // the next sample starts
      key = k;
      pending_.ext = ext;
      members.push_back(std::move(pending_));
      have_pending_ = false;
    }
    if (members.empty()) return false;
    *item = ImportItem();
    item->source = name_;
    item->line = ++samples_;
    item->key = key;
    item->input = key + ":";
    for (const Member& m : members) item->input += " " + m.name;
    if (why.empty()) why = Build(key, &members, item);
    if (!why.empty()) {
      *item =
          ImportItem{item->source, item->line, item->input,
                     name_ + " sample " + std::to_string(item->line) + " \"" + key + "\": " + why};
    }
    return true;
  }

 private:
  // Reads the next member into pending_; false at the end or on an error.
  bool ReadMember(Status* status) {
    TarMember m;
    if (!tar_->Next(&m, status)) return false;
    pending_ = Member();
    pending_.name = std::move(m.name);
    pending_.data = std::move(m.data);
    have_pending_ = true;
    pending_skip_.clear();
    if (!m.regular)
      pending_skip_ = "member \"" + pending_.name + "\" is not a regular file (a link or device)";
    else if (m.too_large)
      pending_skip_ = "member \"" + pending_.name + "\" is over the 2 GiB limit";
    return true;
  }

  // The sample's audio and text into *item, or why it is rejected.
  std::string Build(const std::string& key, std::vector<Member>* members, ImportItem* item) {
    if (!seen_.insert(key).second)
      return "the key appears again after other samples (a tar written out of order)";
    Member* audio = nullptr;
    Member* txt = nullptr;
    Member* js = nullptr;
    for (Member& m : *members) {
      const std::string type = Type(m.ext);
      if (IsAudioExt(type)) {
        if (audio)
          return "two audio members, \"" + audio->name + "\" and \"" + m.name +
                 "\": one record holds one clip";
        audio = &m;
      } else if (type == "txt") {
        txt = &m;
      } else if (type == "json") {
        js = &m;
      }
    }
    if (!audio) return "no audio member (.wav, .flac, .mp3, .ogg or .opus)";
    if (audio->data.empty()) return "audio member \"" + audio->name + "\" is empty";
    if (!txt && !js) return "no transcript (a .txt member, or a .json member with \"text\")";
    if (js) {
      // Also beside a .txt: its speaker, language and other fields are the record's columns.
      nlohmann::json j = nlohmann::json::parse(js->data, nullptr, false);
      if (j.is_discarded() || !j.is_object()) return "\"" + js->name + "\" is not a JSON object";
      if (!txt) {
        auto t = j.find("text");
        if (t == j.end() || !t->is_string()) return "\"" + js->name + "\" has no \"text\" string";
        item->text = t->get<std::string>();
      }
      for (auto [name, dst] :
           {std::pair{"speaker", &item->speaker}, {"language", &item->language}}) {
        auto v = j.find(name);
        if (v == j.end() || v->is_null()) continue;
        if (v->is_string()) *dst = v->get<std::string>();
        else if (v->is_number_integer()) *dst = v->dump();
        else return "\"" + js->name + "\": \"" + name + "\" must be a string or an integer";
      }
      item->fields = std::move(js->data);
    }
    if (txt) item->text = std::move(txt->data);
    item->audio_name = name_ + ":" + audio->name;
    item->audio_bytes = std::move(audio->data);
    return "";
  }

  std::string name_;
  std::unique_ptr<TarReader> tar_;
  Member pending_;
  bool have_pending_ = false;
  std::string pending_skip_;  // the pending member is rejected on its own, for this reason
  uint64_t samples_ = 0;
  std::unordered_set<std::string> seen_;
};

Status OpenTar(const std::string& path, std::unique_ptr<TarSamples>* out) {
  std::unique_ptr<TarReader> tar;
  SLUICE_RETURN_IF_ERROR(TarReader::Open(path, &tar));
  *out = std::make_unique<TarSamples>(path, std::move(tar));
  return Status::OK();
}

class WebDataset : public Importer {
 public:
  explicit WebDataset(std::vector<std::string> tars) : tars_(std::move(tars)) {}
  bool Next(ImportItem* item, Status* status) override {
    while (true) {
      if (!tar_) {
        if (next_ >= tars_.size()) return false;
        *status = OpenTar(tars_[next_], &tar_);
        if (!status->ok()) return false;
      }
      if (tar_->Next(item, status)) return true;
      if (!status->ok()) return false;
      tar_.reset();
      ++next_;
    }
  }

 private:
  std::vector<std::string> tars_;
  size_t next_ = 0;
  std::unique_ptr<TarSamples> tar_;
};

}  // namespace

Status OpenWebDataset(std::vector<std::string> tars, std::unique_ptr<Importer>* out) {
  *out = std::make_unique<WebDataset>(std::move(tars));
  return Status::OK();
}

Status WebDatasetItems(const std::string& name, const std::string& tar,
                       std::vector<ImportItem>* out) {
  std::unique_ptr<TarReader> reader;
  SLUICE_RETURN_IF_ERROR(TarReader::OpenMemory(name, tar, &reader));
  TarSamples samples(name, std::move(reader));
  ImportItem item;
  Status st;
  while (samples.Next(&item, &st)) out->push_back(std::move(item));
  return st;
}

}  // namespace sluice::importers
