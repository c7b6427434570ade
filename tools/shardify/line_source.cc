#include "line_source.h"

#include "shards/checksum.h"

namespace sluice::shardify {

Status LineSource::Count(uint64_t* n, uint64_t* digest) {
  *n = 0;
  // Every line with its end (normalised to "\n") and an end-of-file mark, so moving a line
  // between files or splitting a document changes the digest.
  shards::StreamingChecksum sum;
  for (const auto& f : files_) {
    std::ifstream in(f, std::ios::binary);
    if (!in) return Status::NotFound(f + ": cannot open input");
    std::string line;
    bool in_doc = false;
    while (std::getline(in, line)) {
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
    sum.Update("\0", 1);
  }
  *digest = sum.Digest();
  return Status::OK();
}

bool LineSource::OpenNext(Status* status) {
  while (!open_) {
    if (file_ >= files_.size()) return false;
    in_ = std::ifstream(files_[file_], std::ios::binary);
    if (!in_) {
      *status = Status::NotFound(files_[file_] + ": cannot open input");
      return false;
    }
    open_ = true;
    line_ = 0;
  }
  return true;
}

bool LineSource::ReadLine(std::string* line) {
  if (!std::getline(in_, *line)) return false;
  ++line_;
  if (!line->empty() && line->back() == '\r') line->pop_back();
  return true;
}

bool LineSource::Next(InputItem* item, Status* status) {
  std::string line;
  while (true) {
    if (!OpenNext(status)) return false;
    if (!docs_) {
      if (ReadLine(&line)) {
        item->index = index_++;
        item->source = files_[file_];
        item->line = line_;
        item->text = std::move(line);
        return true;
      }
    } else {
      item->text.clear();
      while (ReadLine(&line)) {
        if (line.empty()) {
          if (item->text.empty()) continue;  // blank lines between documents
          break;
        }
        if (item->text.empty()) item->line = line_;
        else item->text += '\n';
        item->text += line;
      }
      if (!item->text.empty()) {
        item->index = index_++;
        item->source = files_[file_];
        return true;
      }
    }
    open_ = false;
    in_.close();
    ++file_;
  }
}

}  // namespace sluice::shardify
