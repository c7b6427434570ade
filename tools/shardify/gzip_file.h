// A gzip file written as it goes (zlib's deflate, gzip framing), through base/file.h's
// WritableFile and so the sysio fault seam. Deterministic: the header carries no name and no
// time stamp, so the same lines give the same bytes.
#pragma once

#include <zlib.h>

#include <memory>
#include <string>
#include <string_view>

#include "base/file.h"
#include "base/status.h"

namespace sluice::shardify {

class GzipFile {
 public:
  ~GzipFile();
  static Status Create(const std::string& path, std::unique_ptr<GzipFile>* out);
  Status Append(std::string_view data);
  // Ends the gzip stream, flushes and fsyncs; idempotent.
  Status Close();

 private:
  GzipFile() = default;
  Status Deflate(std::string_view data, int flush);

  std::unique_ptr<WritableFile> file_;
  z_stream z_{};
  bool open_ = false;
  std::string out_;
};

}  // namespace sluice::shardify
