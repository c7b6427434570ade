#include "importers/lhotse.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "importers/text_lines.h"

namespace sluice::importers {
namespace {

using json = nlohmann::json;

// The largest start or duration accepted, as for NeMo manifests (tools/shardify/manifest_line.h).
constexpr double kMaxSeconds = 1e7;

std::string Num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// Thrown inside the parser, caught at its top: the reason of the rejection.
struct Reject {
  std::string why;
};

std::string Quote(const std::string& s) { return "\"" + s + "\""; }

const json& Field(const json& j, const char* name, const std::string& where) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) throw Reject{where + " has no \"" + name + "\""};
  return *it;
}

std::string String(const json& j, const char* name, const std::string& where) {
  const json& v = Field(j, name, where);
  if (!v.is_string()) throw Reject{where + ": \"" + name + "\" must be a string"};
  return v.get<std::string>();
}

double Seconds(const json& j, const char* name, const std::string& where) {
  const json& v = Field(j, name, where);
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0 ||
      v.get<double>() > kMaxSeconds)
    throw Reject{where + ": \"" + name + "\" must be a number of seconds from 0 to " +
                 Num(kMaxSeconds)};
  return v.get<double>();
}

// The channels a cut selects: an int or a list of ints.
std::set<int64_t> Channels(const json& v, const std::string& where) {
  std::set<int64_t> out;
  if (v.is_number_integer()) {
    out.insert(v.get<int64_t>());
  } else if (v.is_array() && !v.empty()) {
    for (const json& c : v) {
      if (!c.is_number_integer()) throw Reject{where + ": \"channel\" must hold integers"};
      out.insert(c.get<int64_t>());
    }
  } else {
    throw Reject{where + ": \"channel\" must be an integer or a list of integers"};
  }
  return out;
}

// The recording's audio into *out (path or command); checks the channels the cut selects.
void Recording(const json& rec, const std::set<int64_t>& cut_channels, const std::string& cut,
               const ImportOptions& opt, ImportItem* out) {
  if (!rec.is_object()) throw Reject{cut + ": \"recording\" must be an object"};
  const std::string where = cut + ": recording";
  if (auto t = rec.find("transforms");
      t != rec.end() && !t->is_null() && !(t->is_array() && t->empty()))
    throw Reject{where + " has transforms (" + t->dump().substr(0, 80) +
                 "), which sluice does not apply. HINT: write the transformed audio to files "
                 "(e.g. with lhotse's save_audios) and import those cuts"};
  if (auto id = rec.find("id"); id != rec.end() && id->is_string())
    out->recording = id->get<std::string>();
  const json& sources = Field(rec, "sources", where);
  if (!sources.is_array() || sources.empty())
    throw Reject{where + ": \"sources\" must be a non-empty list"};
  if (sources.size() > 1)
    throw Reject{where + " has " + std::to_string(sources.size()) +
                 " sources (one file per channel); sluice reads recordings of one source. HINT: "
                 "merge the channels into one file"};
  const json& src = sources[0];
  if (!src.is_object()) throw Reject{where + ": a source must be an object"};
  const std::string type = String(src, "type", where + " source");
  const std::string value = String(src, "source", where + " source");
  if (value.empty()) throw Reject{where + ": empty \"source\""};
  if (type == "file") {
    out->audio_path = value;
    out->base_dir = opt.base_dir;
  } else if (type == "command") {
    if (!opt.allow_pipes)
      throw Reject{where + " is a command source (" + Quote(value) +
                   "), not run without --allow-pipes"};
    out->pipe_command = value;
    out->audio_name = "command of " + cut;
  } else {
    throw Reject{where + " has a " + Quote(type) + " source (" + Quote(value.substr(0, 100)) +
                 "), which sluice cannot read: only \"file\" (and \"command\" with --allow-pipes). "
                 "HINT: download or save the audio to local files first"};
  }
  // How many channels the file has: the source's channel list, else the recording's.
  size_t file_channels = 1;
  if (auto c = src.find("channels"); c != src.end() && c->is_array() && !c->empty())
    file_channels = c->size();
  else if (auto r = rec.find("channel_ids"); r != rec.end() && r->is_array() && !r->empty())
    file_channels = r->size();
  // Some channels of a multi-channel file: the clip is that channel, or the average of those
  // (docs/shardify-inputs.md); all of them: the file's downmix, as for any file.
  if (file_channels > 1 && cut_channels.size() != file_channels) {
    for (int64_t c : cut_channels)
      if (c < 0 || c >= static_cast<int64_t>(file_channels))
        throw Reject{cut + " selects channel " + std::to_string(c) + " of a " +
                     std::to_string(file_channels) + "-channel recording"};
    out->channels.assign(cut_channels.begin(), cut_channels.end());
  }
}

void Parse(const std::string& line, const ImportOptions& opt, ImportItem* out) {
  if (line.find_first_not_of(" \t") == std::string::npos) throw Reject{"empty line"};
  json j;
  try {
    j = json::parse(line);
  } catch (const json::exception& e) {
    throw Reject{std::string("invalid JSON: ") + e.what()};
  }
  if (!j.is_object()) throw Reject{"not a JSON object"};
  if (!j.contains("recording") && j.contains("sources"))
    throw Reject{
        "a Lhotse Recording, not a cut. HINT: pass the recordings manifest together with its "
        "supervisions manifest, or a cuts manifest"};
  const json& idj = Field(j, "id", "cut");
  if (!idj.is_string() || idj.get_ref<const std::string&>().empty())
    throw Reject{"cut: \"id\" must be a non-empty string"};
  const std::string id = idj.get<std::string>();
  const std::string cut = "cut " + Quote(id);
  std::string type = "MonoCut";
  if (auto t = j.find("type"); t != j.end() && !t->is_null()) {
    if (!t->is_string()) throw Reject{cut + ": \"type\" must be a string"};
    type = t->get<std::string>();
  }
  if (type != "MonoCut" && type != "MultiCut")
    throw Reject{cut + " is a " + type +
                 "; sluice imports MonoCut and MultiCut. HINT: materialise mixed or padded cuts "
                 "with lhotse (cut.save_audio) first"};
  const double start = Seconds(j, "start", cut);
  const double duration = Seconds(j, "duration", cut);
  if (duration <= 0) throw Reject{cut + ": \"duration\" must be above 0"};
  std::set<int64_t> channels = {0};
  if (auto c = j.find("channel"); c != j.end() && !c->is_null()) channels = Channels(*c, cut);
  Recording(Field(j, "recording", cut), channels, cut, opt, out);

  const json& sups = Field(j, "supervisions", cut);
  if (!sups.is_array()) throw Reject{cut + ": \"supervisions\" must be a list"};
  std::vector<std::pair<double, std::string>> texts;
  for (size_t i = 0; i < sups.size(); ++i) {
    const std::string where = cut + " supervision " + std::to_string(i);
    const json& s = sups[i];
    if (!s.is_object()) throw Reject{where + " must be an object"};
    auto t = s.find("text");
    if (t == s.end() || t->is_null())
      throw Reject{where +
                   " has no \"text\". HINT: a cut without a transcript cannot be a "
                   "training record; drop it or add the text"};
    if (!t->is_string()) throw Reject{where + ": \"text\" must be a string"};
    const double sstart = s.contains("start") ? Seconds(s, "start", where) : 0;
    texts.emplace_back(sstart, t->get<std::string>());
    for (auto [name, dst] : {std::pair{"speaker", &out->speaker}, {"language", &out->language}}) {
      auto v = s.find(name);
      if (v == s.end() || v->is_null()) continue;
      if (!v->is_string()) throw Reject{where + ": \"" + name + "\" must be a string"};
      if (dst->empty()) *dst = v->get<std::string>();
    }
  }
  // --keep-field's source: the cut's "custom" fields, then those of its supervisions that the
  // cut does not set (trim_to_supervisions copies a supervision's custom to it), then the
  // supervisions' own attributes beyond the span, text, speaker and language ("gender", "age"),
  // which lhotse's Kaldi export writes as utt2gender: either import keeps the same field.
  json custom = json::object();
  if (auto c = j.find("custom"); c != j.end() && c->is_object()) custom = *c;
  for (const json& s : sups) {
    if (auto c = s.find("custom"); c != s.end() && c->is_object())
      for (auto it = c->begin(); it != c->end(); ++it)
        if (!custom.contains(it.key())) custom[it.key()] = it.value();
  }
  static const std::set<std::string> kSpan = {"id",      "recording_id", "start",   "duration",
                                              "channel", "text",         "speaker", "language",
                                              "custom",  "alignment"};
  for (const json& s : sups)
    for (auto it = s.begin(); it != s.end(); ++it)
      if (!kSpan.count(it.key()) && !custom.contains(it.key())) custom[it.key()] = it.value();
  if (!custom.empty()) out->fields = custom.dump();
  if (texts.empty())
    throw Reject{cut +
                 " has no supervisions. HINT: a cut without a transcript cannot be a "
                 "training record; drop it or add a supervision"};
  std::stable_sort(texts.begin(), texts.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 0; i < texts.size(); ++i) {
    if (i) out->text += ' ';
    out->text += texts[i].second;
  }
  out->offset_seconds = start;
  out->duration_seconds = duration;
  out->key = id;
}

class LhotseCuts : public Importer {
 public:
  LhotseCuts(std::vector<std::string> paths, ImportOptions opt)
      : paths_(std::move(paths)), opt_(std::move(opt)) {}
  bool Next(ImportItem* item, Status* status) override {
    std::string line;
    while (true) {
      if (!in_) {
        if (file_ >= paths_.size()) return false;
        *status = TextLines::Open(paths_[file_], &in_);
        if (!status->ok()) return false;
        line_ = 0;
      }
      if (in_->Next(&line, status)) break;
      if (!status->ok()) return false;
      in_.reset();
      ++file_;
    }
    *item = ImportItem();
    item->source = paths_[file_];
    item->line = ++line_;
    ParseLhotseCut(line, opt_, item);
    item->input = std::move(line);
    return true;
  }

 private:
  std::vector<std::string> paths_;
  ImportOptions opt_;
  size_t file_ = 0;
  std::unique_ptr<TextLines> in_;
  uint64_t line_ = 0;
};

}  // namespace

void ParseLhotseCut(const std::string& line, const ImportOptions& opt, ImportItem* out) {
  std::string why;
  try {
    Parse(line, opt, out);
    return;
  } catch (const Reject& r) {
    why = r.why;
  } catch (const json::exception& e) {
    // A type error the checks above missed: still a reason, never an escape.
    why = std::string("invalid field: ") + e.what();
  }
  // A rejected item carries its place and reason alone, nothing half-parsed.
  ImportItem rejected;
  rejected.source = std::move(out->source);
  rejected.line = out->line;
  rejected.input = std::move(out->input);
  rejected.reason = std::move(why);
  *out = std::move(rejected);
}

Status OpenLhotseCuts(std::vector<std::string> paths, const ImportOptions& opt,
                      std::unique_ptr<Importer>* out) {
  *out = std::make_unique<LhotseCuts>(std::move(paths), opt);
  return Status::OK();
}

}  // namespace sluice::importers
