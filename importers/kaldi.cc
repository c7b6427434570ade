#include "importers/kaldi.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <unordered_map>
#include <utility>

#include <nlohmann/json.hpp>

#include "base/file.h"

namespace sluice::importers {
namespace {

struct Line {
  uint64_t number = 0;  // 1-based
  std::string text;     // without the line end
};

std::vector<Line> SplitLines(const std::string& s) {
  std::vector<Line> out;
  size_t pos = 0;
  uint64_t n = 0;
  while (pos < s.size()) {
    size_t nl = s.find('\n', pos);
    if (nl == std::string::npos) nl = s.size();
    Line l{++n, s.substr(pos, nl - pos)};
    if (!l.text.empty() && l.text.back() == '\r') l.text.pop_back();
    out.push_back(std::move(l));
    pos = nl + 1;
  }
  return out;
}

bool IsSpace(char c) { return c == ' ' || c == '\t'; }

// The first whitespace-separated field and the rest (leading and trailing blanks trimmed).
void SplitFirst(const std::string& s, std::string* first, std::string* rest) {
  size_t b = 0;
  while (b < s.size() && IsSpace(s[b])) ++b;
  size_t e = b;
  while (e < s.size() && !IsSpace(s[e])) ++e;
  *first = s.substr(b, e - b);
  size_t rb = e;
  while (rb < s.size() && IsSpace(s[rb])) ++rb;
  size_t re = s.size();
  while (re > rb && IsSpace(s[re - 1])) --re;
  *rest = s.substr(rb, re - rb);
}

std::vector<std::string> Fields(const std::string& s) {
  std::vector<std::string> out;
  std::string first, rest = s;
  while (true) {
    SplitFirst(rest, &first, &rest);
    if (first.empty()) break;
    out.push_back(first);
  }
  return out;
}

bool ParseSeconds(const std::string& s, double* v) {
  if (s.empty()) return false;
  char* end = nullptr;
  *v = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && std::isfinite(*v) && *v <= 1e7;
}

// One file of the directory, parsed into id -> entry; the lines it rejects go to *orphans.
struct Entry {
  uint64_t line = 0;
  std::string value;  // what follows the id
  bool used = false;
};

class Table {
 public:
  // `two_fields`: exactly "id value" (utt2spk, utt2lang); else "id rest-of-line" (text, wav.scp).
  void Load(const std::string& source, const std::string& contents, bool two_fields,
            bool allow_empty_value, std::vector<ImportItem>* rejected) {
    source_ = source;
    for (Line& l : SplitLines(contents)) {
      std::string id, rest;
      SplitFirst(l.text, &id, &rest);
      std::string why;
      if (id.empty()) {
        why = "empty line";
      } else if (rest.empty() && !allow_empty_value) {
        why = "\"" + id + "\" has no value (expected \"ID VALUE\")";
      } else if (two_fields && Fields(rest).size() != 1) {
        why = "expected two fields \"ID VALUE\", found " + std::to_string(1 + Fields(rest).size());
      } else if (auto it = map_.find(id); it != map_.end()) {
        why = "duplicate id \"" + id + "\" (first at line " + std::to_string(it->second.line) + ")";
      }
      if (!why.empty()) {
        rejected->push_back(Reject(l, why));
        continue;
      }
      order_.push_back(id);
      map_[id] = Entry{l.number, std::move(rest), false};
      lines_[id] = std::move(l.text);
    }
  }
  bool present() const { return !source_.empty(); }
  const std::string& source() const { return source_; }
  Entry* Find(const std::string& id) {
    auto it = map_.find(id);
    return it == map_.end() ? nullptr : &it->second;
  }
  // The lines whose id no utterance used, rejected with `why(id)`.
  template <typename Why>
  void Unused(std::vector<ImportItem>* out, Why why) {
    for (const std::string& id : order_) {
      const Entry& e = map_[id];
      if (!e.used) out->push_back(Reject(Line{e.line, lines_[id]}, why(id)));
    }
  }
  const std::vector<std::string>& order() const { return order_; }
  const std::string& line_text(const std::string& id) { return lines_[id]; }
  ImportItem Reject(const Line& l, const std::string& why) const {
    ImportItem it;
    it.source = source_;
    it.line = l.number;
    it.input = l.text;
    it.reason = source_ + " line " + std::to_string(l.number) + ": " + why;
    return it;
  }

 private:
  std::string source_;
  std::unordered_map<std::string, Entry> map_;
  std::unordered_map<std::string, std::string> lines_;
  std::vector<std::string> order_;
};

// The audio of wav.scp entry `value` into *item, or the reason it cannot be read.
std::string WavEntry(const std::string& value, const ImportOptions& opt, ImportItem* item) {
  if (value.back() == '|') {
    std::string cmd = value.substr(0, value.size() - 1);
    while (!cmd.empty() && IsSpace(cmd.back())) cmd.pop_back();
    if (cmd.empty()) return "empty pipe command";
    if (!opt.allow_pipes)
      return "pipe entry \"" + value +
             "\" not run without --allow-pipes. HINT: pass --allow-pipes to run wav.scp's "
             "commands (with the rights of this user), or convert the audio to files";
    item->pipe_command = std::move(cmd);
    return "";
  }
  if (value == "-" || value.front() == '|')
    return "\"" + value + "\": stdin and output pipes are not audio sources";
  if (Fields(value).size() != 1)
    return "\"" + value + "\" is neither a path (no spaces) nor a pipe (ending in \"|\")";
  if (const size_t colon = value.rfind(':');
      colon != std::string::npos && colon + 1 < value.size() &&
      value.find_first_not_of("0123456789", colon + 1) == std::string::npos)
    return "\"" + value +
           "\" is an ark offset (extended filename), which sluice does not read. HINT: write the "
           "audio out to files (e.g. with wav-copy ark:... ark,scp:...) and list those";
  item->audio_path = value;
  item->base_dir = opt.base_dir;
  return "";
}

// A segments line's "REC START END" (`value`) into item's recording, offset and duration, and its
// recording's wav.scp entry into *wav_value (marked used); or the reason it cannot be.
std::string SegmentEntry(const std::string& value, const std::string& dir, Table* wav,
                         ImportItem* item, std::string* wav_value) {
  const std::vector<std::string> f = Fields(value);
  double start = 0, end = 0;
  if (f.size() != 3) return "expected \"UTT REC START END\"";
  if (!ParseSeconds(f[1], &start) || start < 0 || !ParseSeconds(f[2], &end) ||
      (end != -1 && end <= start))
    return "start \"" + f[1] + "\" and end \"" + f[2] +
           "\" must be seconds with 0 <= start < end (or end -1: to the end of the recording)";
  Entry* rec = wav->Find(f[0]);
  if (!rec) return "recording \"" + f[0] + "\" is not in " + dir + "/wav.scp";
  rec->used = true;
  *wav_value = rec->value;
  item->recording = f[0];
  item->offset_seconds = start;
  item->duration_seconds = end == -1 ? -1 : end - start;
  return "";
}

}  // namespace

void KaldiItems(const std::string& dir, const KaldiFiles& files, const ImportOptions& opt,
                std::vector<ImportItem>* out) {
  std::vector<ImportItem> rejected;
  Table wav, text, segments, spk, lang;
  auto load = [&](Table* t, const char* name, bool two_fields, bool allow_empty) {
    if (auto it = files.find(name); it != files.end())
      t->Load(dir + "/" + name, it->second, two_fields, allow_empty, &rejected);
  };
  load(&wav, "wav.scp", false, false);
  load(&text, "text", false, /*allow_empty=*/true);  // an utterance of silence has no words
  load(&segments, "segments", false, false);
  load(&spk, "utt2spk", true, false);
  load(&lang, "utt2lang", true, false);
  // --keep-field NAME: utt2NAME, where the directory has it ("utt ID rest-of-line").
  std::vector<Table> kept(opt.fields.size());
  for (size_t k = 0; k < opt.fields.size(); ++k)
    load(&kept[k], ("utt2" + opt.fields[k]).c_str(), false, false);
  // The utterances: segments' lines, else wav.scp's.
  Table& utts = segments.present() ? segments : wav;
  for (const std::string& utt : utts.order()) {
    Entry& u = *utts.Find(utt);
    ImportItem item;
    item.source = utts.source();
    item.line = u.line;
    item.input = utts.line_text(utt);
    item.key = utt;
    // Its lines in text, utt2spk and utt2lang belong to this utterance, kept or rejected: a
    // rejected utterance is one rejected item, not one per file.
    Entry* t = text.Find(utt);
    Entry* s = spk.Find(utt);
    Entry* l = lang.Find(utt);
    for (Entry* e : {t, s, l})
      if (e) e->used = true;
    nlohmann::json fields = nlohmann::json::object();
    for (size_t k = 0; k < kept.size(); ++k) {
      if (Entry* e = kept[k].Find(utt)) {
        e->used = true;
        fields[opt.fields[k]] = e->value;
      }
    }
    auto fail = [&](const std::string& why) {
      out->push_back(utts.Reject(Line{u.line, item.input}, "utterance \"" + utt + "\": " + why));
    };
    std::string wav_value;
    if (segments.present()) {
      if (std::string why = SegmentEntry(u.value, dir, &wav, &item, &wav_value); !why.empty()) {
        fail(why);
        continue;
      }
    } else {
      wav_value = u.value;
      item.recording = utt;
    }
    if (std::string why = WavEntry(wav_value, opt, &item); !why.empty()) {
      fail(segments.present() ? "its recording's wav.scp entry: " + why : why);
      continue;
    }
    if (!item.pipe_command.empty()) item.audio_name = dir + "/wav.scp command of " + utt;
    if (!t) {
      fail("no line in " + dir + "/text");
      continue;
    }
    item.text = t->value;
    if (spk.present()) {
      if (!s) {
        fail("no line in " + dir + "/utt2spk");
        continue;
      }
      item.speaker = s->value;
    }
    if (l) item.language = l->value;
    if (!fields.empty()) item.fields = fields.dump();
    out->push_back(std::move(item));
  }
  const std::string in_utts = segments.present() ? "segments" : "wav.scp";
  auto unknown = [&](const std::string& id) {
    return "utterance \"" + id + "\" is not in " + dir + "/" + in_utts;
  };
  text.Unused(out, unknown);
  spk.Unused(out, unknown);
  lang.Unused(out, unknown);
  for (Table& t : kept) t.Unused(out, unknown);
  if (segments.present())
    wav.Unused(out, [&](const std::string& id) {
      return "recording \"" + id + "\" has no line in " + dir + "/segments";
    });
  for (ImportItem& r : rejected) out->push_back(std::move(r));
}

Status OpenKaldiDir(const std::string& dir, const ImportOptions& opt,
                    std::unique_ptr<Importer>* out) {
  KaldiFiles files;
  std::vector<std::string> names = {"wav.scp", "text", "segments", "utt2spk", "utt2lang"};
  for (const std::string& f : opt.fields) names.push_back("utt2" + f);
  for (const std::string& name : names) {
    const std::string path = dir + "/" + name;
    // A kept field's file too: a misspelt --keep-field would otherwise be a column of nulls.
    const bool kept = name.rfind("utt2", 0) == 0 && name != "utt2spk" && name != "utt2lang";
    const bool required = name == "wav.scp" || name == "text" || kept;
    std::error_code ec;
    if (!required && !std::filesystem::exists(path, ec)) continue;
    std::string contents;
    Status st = ReadFileToString(path, &contents);
    if (st.IsNotFound() && kept)
      return Status::NotFound(path + ": no such file; --keep-field " + name.substr(4) +
                              " reads it from each Kaldi directory. HINT: check the field's "
                              "spelling, or leave the --keep-field out");
    if (st.IsNotFound())
      return Status::NotFound(path +
                              ": no such file; a Kaldi data directory holds wav.scp and "
                              "text. HINT: pass the directory itself (data/train)");
    SLUICE_RETURN_IF_ERROR(st);
    files[name] = std::move(contents);
  }
  std::vector<ImportItem> items;
  KaldiItems(dir, files, opt, &items);
  *out = std::make_unique<ItemsImporter>(std::move(items));
  return Status::OK();
}

}  // namespace sluice::importers
