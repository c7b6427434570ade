#include "set_aside.h"

#include <filesystem>
#include <vector>

#include "base/file.h"
#include "loader/dataset_tokenizer.h"
#include "part.h"
#include "shards/manifest.h"

namespace sluice::shardify {
namespace fs = std::filesystem;
namespace {

bool IsDatasetFile(const std::string& name) {
  return name == shards::kManifestName || name == "rejects.jsonl" ||
         loader::IsTokenizerFileName(name) || name == kPartMarkerName ||
         (name.rfind("shard-", 0) == 0 && name.ends_with(".sluice"));
}

// The dataset files in `from`, manifest.json first.
Status DatasetFiles(const std::string& from, std::vector<std::string>* names) {
  std::error_code ec;
  names->clear();
  for (fs::directory_iterator it(from, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (IsDatasetFile(name) && name != shards::kManifestName) names->push_back(name);
  }
  if (ec) return Status::IOError(from + ": list: " + ec.message());
  if (fs::exists(from + "/" + shards::kManifestName, ec))
    names->insert(names->begin(), shards::kManifestName);
  return Status::OK();
}

Status Remove(const fs::path& p) {
  std::error_code ec;
  fs::remove_all(p, ec);
  if (ec) return Status::IOError(p.string() + ": remove: " + ec.message());
  return Status::OK();
}

}  // namespace

Status SetAsideDataset(const std::string& dir) {
  const std::string aside = dir + "/" + kSetAsideName;
  SLUICE_RETURN_IF_ERROR(Remove(aside));
  std::error_code ec;
  fs::create_directory(aside, ec);
  if (ec) return Status::IOError(aside + ": cannot create directory: " + ec.message());
  std::vector<std::string> names;
  SLUICE_RETURN_IF_ERROR(DatasetFiles(dir, &names));
  for (const std::string& name : names)
    SLUICE_RETURN_IF_ERROR(RenameDurable(dir + "/" + name, aside + "/" + name));
  return Status::OK();
}

Status RestoreDataset(const std::string& dir, bool* restored) {
  *restored = false;
  const std::string aside = dir + "/" + kSetAsideName;
  std::error_code ec;
  if (!fs::is_directory(aside, ec)) return Status::OK();
  std::vector<std::string> names;
  SLUICE_RETURN_IF_ERROR(DatasetFiles(aside, &names));
  // Not the set-aside's shards (they come back under their names): whatever else the failed run
  // left that a dataset file would be confused with.
  std::vector<std::string> here;
  SLUICE_RETURN_IF_ERROR(DatasetFiles(dir, &here));
  for (const std::string& name : here) SLUICE_RETURN_IF_ERROR(Remove(dir + "/" + name));
  // manifest.json last: DIR is the old dataset again only once every file it lists is back.
  for (size_t i = names.size(); i-- > 0;)
    SLUICE_RETURN_IF_ERROR(RenameDurable(aside + "/" + names[i], dir + "/" + names[i]));
  *restored = true;
  return Remove(aside);
}

Status DiscardSetAside(const std::string& dir) { return Remove(dir + "/" + kSetAsideName); }

}  // namespace sluice::shardify
