#include "rejects.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <nlohmann/json.hpp>

namespace sluice::shardify {

RejectsWriter::~RejectsWriter() {
  if (f_) std::fclose(f_);
}

Status RejectsWriter::Open(const std::string& path, uint64_t keep_bytes) {
  path_ = path;
  if (keep_bytes > 0) {
    if (::truncate(path.c_str(), static_cast<off_t>(keep_bytes)) != 0) {
      return Status::IOError(path + ": truncate to " + std::to_string(keep_bytes) + ": " +
                             std::strerror(errno));
    }
    f_ = std::fopen(path.c_str(), "ab");
  } else {
    f_ = std::fopen(path.c_str(), "wb");
  }
  if (!f_) return Status::IOError(path + ": open: " + std::strerror(errno));
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
  if (std::fwrite(text.data(), 1, text.size(), f_) != text.size()) {
    return Status::IOError(path_ + ": write: " + std::strerror(errno));
  }
  bytes_ += text.size();
  count_++;
  return Status::OK();
}

Status RejectsWriter::Flush() {
  if (f_ && std::fflush(f_) != 0)
    return Status::IOError(path_ + ": flush: " + std::strerror(errno));
  return Status::OK();
}

Status RejectsWriter::Close() {
  if (!f_) return Status::OK();
  Status s = Flush();
  if (s.ok() && ::fsync(fileno(f_)) != 0)
    s = Status::IOError(path_ + ": fsync: " + std::strerror(errno));
  std::fclose(f_);
  f_ = nullptr;
  return s;
}

}  // namespace sluice::shardify
