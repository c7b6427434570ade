#include "line_source.h"

#include "shards/checksum.h"

namespace sluice::shardify {
namespace {

Status OpenInput(const std::string& path, std::unique_ptr<LineReader>* in) {
  Status st = LineReader::Open(path, in);
  if (st.IsNotFound()) return Status::NotFound(path + ": cannot open input: no such file");
  return st;
}

}  // namespace

Status LineSource::Count(uint64_t* n, uint64_t* digest) {
  *n = 0;
  // Every line with its end (normalised to "\n") and an end-of-file mark, so moving a line
  // between files or splitting a document changes the digest.
  shards::StreamingChecksum sum;
  for (const auto& f : files_) {
    std::unique_ptr<LineReader> in;
    SLUICE_RETURN_IF_ERROR(OpenInput(f, &in));
    std::string line;
    bool in_doc = false;
    Status st;
    while (in->Next(&line, &st)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      line.push_back('\n');
      sum.Update(line.data(), line.size());
      line.pop_back();
      if (!docs_) {
        ++*n;
      } else if (line.empty()) {
        in_doc = false;
      } else if (!in_doc) {
        in_doc = true;
        ++*n;
      }
    }
    SLUICE_RETURN_IF_ERROR(st);
    sum.Update("\0", 1);
  }
  *digest = sum.Digest();
  return Status::OK();
}

bool LineSource::OpenNext(Status* status) {
  while (!open_) {
    if (file_ >= files_.size()) return false;
    *status = OpenInput(files_[file_], &in_);
    if (!status->ok()) return false;
    open_ = true;
    line_ = 0;
  }
  return true;
}

bool LineSource::ReadLine(std::string* line, Status* status) {
  if (!in_->Next(line, status)) return false;
  ++line_;
  if (!line->empty() && line->back() == '\r') line->pop_back();
  return true;
}

bool LineSource::Next(InputItem* item, Status* status) {
  std::string line;
  while (true) {
    if (!OpenNext(status)) return false;
    if (!docs_) {
      if (ReadLine(&line, status)) {
        item->index = index_++;
        item->source = files_[file_];
        item->line = line_;
        item->text = std::move(line);
        return true;
      }
    } else {
      item->text.clear();
      while (ReadLine(&line, status)) {
        if (line.empty()) {
          if (item->text.empty()) continue;  // blank lines between documents
          break;
        }
        if (item->text.empty()) item->line = line_;
        else item->text += '\n';
        item->text += line;
      }
      if (!status->ok()) return false;  // never a document cut short by a read error
      if (!item->text.empty()) {
        item->index = index_++;
        item->source = files_[file_];
        return true;
      }
    }
    if (!status->ok()) return false;  // a read error, not the end of the file
    open_ = false;
    in_.reset();
    ++file_;
  }
}

}  // namespace sluice::shardify
