#include "importers/webdataset.h"

#include <archive.h>
#include <archive_entry.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <unordered_set>
#include <utility>

#include <nlohmann/json.hpp>

#include "base/sysio.h"

namespace sluice::importers {
namespace {

constexpr uint64_t kMaxMemberBytes = uint64_t{1} << 31;  // 2 GiB: no audio clip is larger

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

// libarchive reading through base/sysio.h (the fault seam), one chunk at a time.
struct FileReader {
  std::string path;
  int fd = -1;
  std::string buf = std::string(1 << 16, '\0');
  std::string error;
};

la_ssize_t ReadCallback(struct archive*, void* data, const void** out) {
  auto* r = static_cast<FileReader*>(data);
  ssize_t n;
  do {
    n = sysio::Read(r->fd, r->buf.data(), r->buf.size(), r->path.c_str());
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    r->error = r->path + ": read: " + std::strerror(errno);
    return -1;
  }
  *out = r->buf.data();
  return n;
}

struct Member {
  std::string name, ext, data;
};

class TarSamples {
 public:
  // Takes ownership of `a`, opened.
  TarSamples(std::string name, struct archive* a, std::unique_ptr<FileReader> file)
      : name_(std::move(name)), a_(a), file_(std::move(file)) {}
  ~TarSamples() { archive_read_free(a_); }

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
    if (eof_) return false;  // libarchive refuses a call after its end
    struct archive_entry* e = nullptr;
    const int rc = archive_read_next_header(a_, &e);
    if (rc == ARCHIVE_EOF) {
      eof_ = true;
      return false;
    }
    if (rc < ARCHIVE_WARN) return Fail(status, "reading a header after " + Where());
    pending_ = Member();
    const char* path = archive_entry_pathname(e);
    pending_.name = path ? path : "";
    have_pending_ = true;
    pending_skip_.clear();
    if (archive_entry_filetype(e) == AE_IFDIR) {
      // Folders in a tar are structure, not samples: nothing of a sample is lost.
      have_pending_ = false;
      return ReadMember(status);
    }
    if (archive_entry_filetype(e) != AE_IFREG) {
      pending_skip_ = "member \"" + pending_.name + "\" is not a regular file (a link or device)";
      return true;
    }
    const la_int64_t size = archive_entry_size(e);
    if (size < 0 || static_cast<uint64_t>(size) > kMaxMemberBytes) {
      pending_skip_ = "member \"" + pending_.name + "\" of " + std::to_string(size) +
                      " bytes is over the 2 GiB limit";
      archive_read_data_skip(a_);
      return true;
    }
    pending_.data.resize(static_cast<size_t>(size));
    size_t got = 0;
    while (got < pending_.data.size()) {
      const la_ssize_t n =
          archive_read_data(a_, pending_.data.data() + got, pending_.data.size() - got);
      if (n < 0) return Fail(status, "reading member \"" + pending_.name + "\"");
      if (n == 0) break;
      got += static_cast<size_t>(n);
    }
    if (got != pending_.data.size())
      return Fail(status, "member \"" + pending_.name + "\" cut off: " + std::to_string(got) +
                              " of " + std::to_string(size) + " bytes");
    last_ = pending_.name;
    return true;
  }

  std::string Where() const { return last_.empty() ? "the start" : "member \"" + last_ + "\""; }

  bool Fail(Status* status, const std::string& what) {
    if (file_ && !file_->error.empty()) {
      *status = Status::IOError(file_->error + " (" + what + ")");
    } else {
      const char* msg = archive_error_string(a_);
      *status = Status::Corruption(name_ + ": " + what + ": " + (msg ? msg : "damaged tar") +
                                   ". HINT: check the tar with `tar tvf " + name_ + "`");
    }
    return false;
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
    if (txt) {
      item->text = std::move(txt->data);
    } else if (js) {
      nlohmann::json j = nlohmann::json::parse(js->data, nullptr, false);
      if (j.is_discarded() || !j.is_object()) return "\"" + js->name + "\" is not a JSON object";
      auto t = j.find("text");
      if (t == j.end() || !t->is_string()) return "\"" + js->name + "\" has no \"text\" string";
      item->text = t->get<std::string>();
      for (auto [name, dst] : {std::pair{"speaker", &item->speaker}, {"language", &item->language}})
        if (auto v = j.find(name); v != j.end() && v->is_string()) *dst = v->get<std::string>();
    } else {
      return "no transcript (a .txt member, or a .json member with \"text\")";
    }
    item->audio_name = name_ + ":" + audio->name;
    item->audio_bytes = std::move(audio->data);
    return "";
  }

  std::string name_;
  struct archive* a_;
  std::unique_ptr<FileReader> file_;
  Member pending_;
  bool have_pending_ = false;
  std::string pending_skip_;  // the pending member is rejected on its own, for this reason
  std::string last_;
  uint64_t samples_ = 0;
  bool eof_ = false;
  std::unordered_set<std::string> seen_;
};

struct archive* NewReader() {
  struct archive* a = archive_read_new();
  archive_read_support_format_tar(a);
  archive_read_support_filter_gzip(a);  // .tar.gz shards
  return a;
}

Status OpenTar(const std::string& path, std::unique_ptr<TarSamples>* out) {
  auto file = std::make_unique<FileReader>();
  file->path = path;
  SLUICE_RETURN_IF_ERROR(sysio::OpenRegular(path, O_RDONLY | O_CLOEXEC, &file->fd));
  struct archive* a = NewReader();
  if (archive_read_open(a, file.get(), nullptr, ReadCallback, [](struct archive*, void* d) {
        auto* r = static_cast<FileReader*>(d);
        if (r->fd >= 0) ::close(r->fd);
        r->fd = -1;
        return ARCHIVE_OK;
      }) != ARCHIVE_OK) {
    const std::string msg = archive_error_string(a) ? archive_error_string(a) : "not a tar";
    archive_read_free(a);
    return Status::Corruption(path + ": " + msg + ". HINT: a WebDataset shard is a tar file");
  }
  *out = std::make_unique<TarSamples>(path, a, std::move(file));
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
  struct archive* a = NewReader();
  if (archive_read_open_memory(a, tar.data(), tar.size()) != ARCHIVE_OK) {
    const std::string msg = archive_error_string(a) ? archive_error_string(a) : "not a tar";
    archive_read_free(a);
    return Status::Corruption(name + ": " + msg);
  }
  TarSamples samples(name, a, nullptr);
  ImportItem item;
  Status st;
  while (samples.Next(&item, &st)) out->push_back(std::move(item));
  return st;
}

}  // namespace sluice::importers
