#include "import_source.h"

#include <cstdio>
#include <filesystem>

#include "importers/hf_parquet.h"
#include "importers/kaldi.h"
#include "importers/lhotse_manifests.h"
#include "importers/shar.h"
#include "importers/webdataset.h"
#include "shards/checksum.h"

namespace sluice::shardify {

Status MakeImporterFactory(const std::string& format, const std::vector<std::string>& inputs,
                           const importers::ImportOptions& opt, ImporterFactory* out) {
  if (format == "lhotse") {
    std::error_code ec;
    if (inputs.size() == 1 && std::filesystem::is_directory(inputs[0], ec)) {
      *out = [dir = inputs[0], opt](std::unique_ptr<importers::Importer>* in) {
        return importers::OpenShar(dir, opt, in);
      };
      return Status::OK();
    }
    *out = [inputs, opt](std::unique_ptr<importers::Importer>* in) {
      return importers::OpenLhotse(inputs, opt, in);
    };
  } else if (format == "kaldi") {
    if (inputs.size() != 1)
      return Status::InvalidArgument("--from kaldi takes one data directory, got " +
                                     std::to_string(inputs.size()) +
                                     ". HINT: combine data directories with Kaldi's "
                                     "utils/combine_data.sh, or shardify each and merge");
    *out = [dir = inputs[0], opt](std::unique_ptr<importers::Importer>* in) {
      return importers::OpenKaldiDir(dir, opt, in);
    };
  } else if (format == "wds") {
    *out = [inputs](std::unique_ptr<importers::Importer>* in) {
      return importers::OpenWebDataset(inputs, in);
    };
  } else if (format == "hf") {
    *out = [inputs, opt](std::unique_ptr<importers::Importer>* in) {
      return importers::OpenHfParquet(inputs, opt, in);
    };
  } else {
    return Status::InvalidArgument("--from '" + format +
                                   "': expected nemo, lhotse, kaldi, wds or hf");
  }
  return Status::OK();
}

Status ImportSource::Count(uint64_t* n, uint64_t* digest) {
  std::unique_ptr<importers::Importer> in;
  SLUICE_RETURN_IF_ERROR(factory_(&in));
  shards::StreamingChecksum sum;
  importers::ImportItem item;
  Status st;
  *n = 0;
  std::string last;
  while (in->Next(&item, &st)) {
    if (recordings_) {
      std::string key = RecordingKey(item);
      *n += key.empty() || key != last;
      last = std::move(key);
      sum.Update(item.recording.data(), item.recording.size());
      sum.Update("\0", 1);
    } else {
      ++*n;
    }
    // Everything the item carries (a tar's transcript is not in its input summary), each part
    // ended by "\0", so moving bytes between parts changes the digest.
    char span[64];
    std::snprintf(span, sizeof span, "%lu %.17g %.17g", static_cast<unsigned long>(item.line),
                  item.offset_seconds, item.duration_seconds);
    std::string numbers = span;
    for (int c : item.channels) numbers += " c" + std::to_string(c);
    for (const std::string* s : std::initializer_list<const std::string*>{
             &item.source, &numbers, &item.input, &item.reason, &item.key, &item.text,
             &item.audio_path, &item.pipe_command, &item.audio_bytes, &item.speaker, &item.language,
             &item.fields}) {
      sum.Update(s->data(), s->size());
      sum.Update("\0", 1);
    }
  }
  SLUICE_RETURN_IF_ERROR(st);
  *digest = sum.Digest();
  return Status::OK();
}

std::string RecordingKey(const importers::ImportItem& item) {
  if (!item.reason.empty()) return "";
  std::string key;
  for (const std::string* s :
       {&item.recording, &item.audio_path, &item.base_dir, &item.pipe_command, &item.audio_name}) {
    key += *s;
    key.push_back('\0');
  }
  return key;
}

bool ImportSource::NextRecording(InputItem* item, Status* status) {
  auto items = std::make_shared<std::vector<importers::ImportItem>>();
  if (pending_) {
    items->push_back(std::move(*pending_));
    pending_.reset();
  } else {
    items->emplace_back();
    if (!in_->Next(&items->back(), status)) return false;
  }
  const std::string key = RecordingKey(items->front());
  while (!key.empty()) {
    auto next = std::make_unique<importers::ImportItem>();
    if (!in_->Next(next.get(), status)) {
      if (!status->ok()) return false;
      break;
    }
    if (RecordingKey(*next) != key) {
      pending_ = std::move(next);
      break;
    }
    items->push_back(std::move(*next));
  }
  item->index = index_++;
  item->source = items->front().source;
  item->line = items->front().line;
  item->text = items->front().input;
  item->imported = std::shared_ptr<const importers::ImportItem>(items, &items->front());
  item->recording = std::move(items);
  return true;
}

bool ImportSource::Next(InputItem* item, Status* status) {
  if (!in_) {
    *status = factory_(&in_);
    if (!status->ok()) return false;
  }
  if (recordings_) return NextRecording(item, status);
  auto imported = std::make_shared<importers::ImportItem>();
  if (!in_->Next(imported.get(), status)) return false;
  item->index = index_++;
  item->source = imported->source;
  item->line = imported->line;
  item->text = imported->input;
  item->imported = std::move(imported);
  return true;
}

}  // namespace sluice::shardify
