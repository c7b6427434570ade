// rejects.jsonl: one line per input that was not written, with its reason.
// Written + rejected = input items, always (docs/shardify.md).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "base/file.h"
#include "base/status.h"

namespace sluice::shardify {

class RejectsWriter {
 public:
  // Opens DIR/rejects.jsonl; with keep_bytes > 0 keeps that many bytes of an
  // earlier run's file (--resume) and appends after them.
  Status Open(const std::string& path, uint64_t keep_bytes);
  // {"source": ..., "line": ..., "reason": ..., "input": first 300 bytes}
  Status Add(std::string_view source, uint64_t line, std::string_view reason,
             std::string_view input);
  // Flushes and fsyncs, so bytes() is on disk before a journal entry names it.
  Status Flush();
  uint64_t bytes() const { return bytes_; }
  uint64_t count() const { return count_; }
  void set_count(uint64_t n) { count_ = n; }
  Status Close();

 private:
  std::unique_ptr<WritableFile> f_;
  uint64_t bytes_ = 0;
  uint64_t count_ = 0;
};

}  // namespace sluice::shardify
