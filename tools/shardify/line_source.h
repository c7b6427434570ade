// ItemSource over text files: one item per line, or per document (blocks of
// lines separated by blank lines) with docs = true. Line numbers are 1-based
// and refer to the file the item came from, so rejects point at it exactly.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/file.h"
#include "ingest.h"

namespace sluice::shardify {

class LineSource : public ItemSource {
 public:
  LineSource(std::vector<std::string> files, bool docs) : files_(std::move(files)), docs_(docs) {}
  Status Count(uint64_t* n, uint64_t* digest) override;
  bool Next(InputItem* item, Status* status) override;

 private:
  bool OpenNext(Status* status);
  bool ReadLine(std::string* line, Status* status);  // strips "\n" and "\r\n"

  std::vector<std::string> files_;
  bool docs_;
  size_t file_ = 0;
  bool open_ = false;
  std::unique_ptr<LineReader> in_;
  uint64_t line_ = 0;
  uint64_t index_ = 0;
};

}  // namespace sluice::shardify
