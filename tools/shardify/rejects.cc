#include "rejects.h"

#include <nlohmann/json.hpp>

namespace sluice::shardify {

Status RejectsWriter::Open(const std::string& path, uint64_t keep_bytes) {
  SLUICE_RETURN_IF_ERROR(WritableFile::OpenForAppend(path, keep_bytes, &f_));
  bytes_ = keep_bytes;
  return Status::OK();
}

Status RejectsWriter::Add(std::string_view source, uint64_t line, std::string_view reason,
                          std::string_view input) {
  nlohmann::json j;
  j["source"] = std::string(source);
  j["line"] = line;
  j["reason"] = std::string(reason);
  // The raw input may be invalid UTF-8 (that may be why it was rejected): the
  // replace handler keeps the JSON line valid.
  j["input"] = std::string(input.substr(0, 300));
  const std::string text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  SLUICE_RETURN_IF_ERROR(f_->Append(text));
  bytes_ += text.size();
  count_++;
  return Status::OK();
}

Status RejectsWriter::Flush() { return f_ ? f_->Sync() : Status::OK(); }

Status RejectsWriter::Close() {
  if (!f_) return Status::OK();
  Status s = f_->Close();
  f_.reset();
  return s;
}

}  // namespace sluice::shardify
