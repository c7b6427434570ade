#include "fingerprint.h"

#include "base/file.h"
#include "loader/options_json.h"
#include "part.h"
#include "shards/manifest.h"

namespace sluice::shardify {

std::string FingerprintDifference(const nlohmann::json& now, const nlohmann::json& recorded,
                                  const std::string& where) {
  std::string path;
  return loader::FirstDifference(now, recorded, where, &path);
}

Status CheckCompleteDataset(const std::string& dir, const nlohmann::json& fingerprint,
                            const std::string& input_xxh3) {
  shards::Manifest m;
  SLUICE_RETURN_IF_ERROR(shards::LoadManifest(dir, &m));
  const std::string hint =
      ". HINT: --resume finishes a run with the command line that started it; pass --overwrite "
      "to replace the dataset, or choose another --out";
  nlohmann::json recorded;
  std::string where = "the dataset";
  std::string then_xxh3 = input_xxh3;  // a journal records none: its fingerprint only
  if (m.source->is_object() && m.source->contains("options")) {
    recorded = (*m.source)["options"];
    then_xxh3 = m.source->value("input_xxh3", "");
  } else {
    // A run that failed after its manifest's rename left its journal, whose first line is the
    // fingerprint.
    std::unique_ptr<LineReader> in;
    Status st = LineReader::Open(dir + "/" + kJournalName, &in);
    std::string first;
    if (st.ok() && in->Next(&first, &st)) {
      const nlohmann::json j = nlohmann::json::parse(first, nullptr, false);
      if (j.is_object() && j.contains("fingerprint")) recorded = j["fingerprint"];
    }
    if (!st.ok() && !st.IsNotFound()) return st;
    where = "the journal";
    if (recorded.is_null()) {
      return Status::InvalidArgument(
          dir +
          " already holds a complete dataset that records no shardify options (made by "
          "merge, or by an older shardify), so --resume cannot tell whether this command "
          "line made it" +
          hint);
    }
  }
  // The options first: they name the input's path and size, which say more than two digests.
  const std::string diff = FingerprintDifference(fingerprint, recorded, where);
  if (!diff.empty()) {
    return Status::InvalidArgument(dir + " already holds a complete dataset, made with other " +
                                   "inputs or options: " + diff + hint);
  }
  if (then_xxh3 != input_xxh3) {
    return Status::InvalidArgument(dir + " already holds a complete dataset, made from another " +
                                   "version of the input (XXH3 " + input_xxh3 + " (" + where +
                                   ": " + then_xxh3 + "))" + hint);
  }
  return Status::OK();
}

}  // namespace sluice::shardify
