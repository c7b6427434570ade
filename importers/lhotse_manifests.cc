#include "importers/lhotse_manifests.h"

#include <unordered_map>
#include <utility>

#include <nlohmann/json.hpp>

#include "importers/lhotse.h"
#include "importers/text_lines.h"

namespace sluice::importers {
namespace {

using json = nlohmann::json;

enum class Kind { kEmpty, kCuts, kRecordings, kSupervisions, kUnknown };

const char* KindName(Kind k) {
  switch (k) {
    case Kind::kEmpty: return "nothing";
    case Kind::kCuts: return "cuts";
    case Kind::kRecordings: return "recordings";
    case Kind::kSupervisions: return "supervisions";
    case Kind::kUnknown: return "no Lhotse manifest lines";
  }
  return "";
}

Kind KindOf(const std::string& line) {
  const json j = json::parse(line, nullptr, false);
  if (!j.is_object()) return Kind::kUnknown;
  if (j.contains("recording") || j.contains("type")) return Kind::kCuts;
  if (j.contains("sources")) return Kind::kRecordings;
  if (j.contains("recording_id")) return Kind::kSupervisions;
  return Kind::kUnknown;
}

Status ReadLines(const std::string& path, std::vector<std::string>* lines) {
  std::unique_ptr<TextLines> in;
  SLUICE_RETURN_IF_ERROR(TextLines::Open(path, &in));
  Status st;
  for (std::string line; in->Next(&line, &st);) lines->push_back(std::move(line));
  return st;
}

// The first non-blank line's kind.
Status Classify(const std::string& path, Kind* kind) {
  std::unique_ptr<TextLines> in;
  SLUICE_RETURN_IF_ERROR(TextLines::Open(path, &in));
  Status st;
  for (std::string line; in->Next(&line, &st);) {
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    *kind = KindOf(line);
    return Status::OK();
  }
  *kind = Kind::kEmpty;
  return st;
}

ImportItem Rejected(const std::string& source, uint64_t line, const std::string& input,
                    const std::string& why) {
  ImportItem it;
  it.source = source;
  it.line = line;
  it.input = input;
  it.reason = source + " line " + std::to_string(line) + ": " + why;
  return it;
}

}  // namespace

void LhotsePairItems(const std::string& rec_name, const std::vector<std::string>& recordings,
                     const std::string& sup_name, const std::vector<std::string>& supervisions,
                     const ImportOptions& opt, std::vector<ImportItem>* out) {
  struct Rec {
    json value;
    uint64_t line;
    bool used = false;
  };
  std::unordered_map<std::string, Rec> recs;
  std::vector<std::string> rec_order;
  std::vector<ImportItem> rejected_recs;
  for (size_t i = 0; i < recordings.size(); ++i) {
    json j = json::parse(recordings[i], nullptr, false);
    auto id = j.is_object() ? j.find("id") : j.end();
    if (!j.is_object() || id == j.end() || !id->is_string() ||
        id->get_ref<const std::string&>().empty()) {
      rejected_recs.push_back(Rejected(rec_name, i + 1, recordings[i],
                                       "not a Lhotse Recording (a JSON object with an \"id\")"));
      continue;
    }
    const std::string rid = id->get<std::string>();
    if (auto it = recs.find(rid); it != recs.end()) {
      rejected_recs.push_back(Rejected(rec_name, i + 1, recordings[i],
                                       "duplicate recording id \"" + rid + "\" (first at line " +
                                           std::to_string(it->second.line) + ")"));
      continue;
    }
    rec_order.push_back(rid);
    recs.emplace(rid, Rec{std::move(j), i + 1});
  }
  std::unordered_map<std::string, uint64_t> seen;
  for (size_t i = 0; i < supervisions.size(); ++i) {
    const std::string& line = supervisions[i];
    const json s = json::parse(line, nullptr, false);
    auto id = s.is_object() ? s.find("id") : s.end();
    auto rid = s.is_object() ? s.find("recording_id") : s.end();
    if (!s.is_object() || id == s.end() || !id->is_string() ||
        id->get_ref<const std::string&>().empty() || rid == s.end() || !rid->is_string()) {
      out->push_back(Rejected(sup_name, i + 1, line,
                              "not a Lhotse SupervisionSegment (a JSON object with \"id\" and "
                              "\"recording_id\" strings)"));
      continue;
    }
    const std::string sid = id->get<std::string>();
    if (auto [it, fresh] = seen.emplace(sid, i + 1); !fresh) {
      out->push_back(Rejected(sup_name, i + 1, line,
                              "duplicate supervision id \"" + sid + "\" (first at line " +
                                  std::to_string(it->second) + ")"));
      continue;
    }
    auto rec = recs.find(rid->get<std::string>());
    if (rec == recs.end()) {
      out->push_back(Rejected(sup_name, i + 1, line,
                              "supervision \"" + sid + "\": recording \"" +
                                  rid->get<std::string>() + "\" is not in " + rec_name));
      continue;
    }
    rec->second.used = true;
    // The cut trim_to_supervisions makes: the supervision's span, the supervision inside it.
    json sup = s;
    sup["start"] = 0;
    json cut = {{"id", sid},
                {"start", s.value("start", json())},
                {"duration", s.value("duration", json())},
                {"supervisions", json::array({sup})},
                {"recording", rec->second.value},
                {"type", "MonoCut"}};
    if (s.contains("channel")) cut["channel"] = s["channel"];
    ImportItem item;
    item.source = sup_name;
    item.line = i + 1;
    item.input = line;
    ParseLhotseCut(cut.dump(), opt, &item);
    if (!item.reason.empty())
      item.reason = sup_name + " line " + std::to_string(i + 1) + ": " + item.reason;
    out->push_back(std::move(item));
  }
  for (const std::string& rid : rec_order) {
    const Rec& r = recs[rid];
    if (!r.used)
      out->push_back(Rejected(rec_name, r.line, recordings[r.line - 1],
                              "recording \"" + rid + "\" has no supervision in " + sup_name));
  }
  for (ImportItem& r : rejected_recs) out->push_back(std::move(r));
}

Status OpenLhotse(const std::vector<std::string>& paths, const ImportOptions& opt,
                  std::unique_ptr<Importer>* out) {
  std::vector<Kind> kinds(paths.size());
  bool all_cuts = true;
  for (size_t i = 0; i < paths.size(); ++i) {
    SLUICE_RETURN_IF_ERROR(Classify(paths[i], &kinds[i]));
    all_cuts &= kinds[i] == Kind::kCuts || kinds[i] == Kind::kEmpty;
  }
  if (all_cuts) return OpenLhotseCuts(paths, opt, out);
  if (paths.size() == 2 && kinds[0] != kinds[1] &&
      (kinds[0] == Kind::kRecordings || kinds[0] == Kind::kSupervisions) &&
      (kinds[1] == Kind::kRecordings || kinds[1] == Kind::kSupervisions)) {
    const size_t r = kinds[0] == Kind::kRecordings ? 0 : 1;
    std::vector<std::string> recordings, supervisions;
    SLUICE_RETURN_IF_ERROR(ReadLines(paths[r], &recordings));
    SLUICE_RETURN_IF_ERROR(ReadLines(paths[1 - r], &supervisions));
    std::vector<ImportItem> items;
    LhotsePairItems(paths[r], recordings, paths[1 - r], supervisions, opt, &items);
    *out = std::make_unique<ItemsImporter>(std::move(items));
    return Status::OK();
  }
  std::string what;
  for (size_t i = 0; i < paths.size(); ++i)
    what += std::string(i ? ", " : "") + paths[i] + " holds " + KindName(kinds[i]);
  return Status::InvalidArgument(
      "--from lhotse takes cuts manifests, or one recordings and one supervisions manifest: " +
      what +
      ". HINT: make cuts with CutSet.from_manifests(recordings=..., supervisions=...)."
      "to_file(\"cuts.jsonl.gz\")");
}

}  // namespace sluice::importers
