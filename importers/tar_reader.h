// Members of a tar file read in order with libarchive, through base/sysio.h (the fault seam):
// what the Shar importer reads its audio tars with.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"

namespace sluice::importers {

struct TarMember {
  std::string name;
  std::string data;        // a regular file's bytes (at most 2 GiB)
  bool regular = true;     // false: a link, device or FIFO (data empty)
  bool too_large = false;  // a regular file over 2 GiB, skipped (data empty)
};

class TarReader {
 public:
  ~TarReader();
  // Opens `path` (NotFound, InvalidArgument for a FIFO or directory; Corruption when it is not a
  // tar). Plain or gzip-compressed.
  static Status Open(const std::string& path, std::unique_ptr<TarReader>* out);
  // A tar held in memory (tests, fuzzers); `bytes` must outlive the reader, `name` names it.
  static Status OpenMemory(const std::string& name, const std::string& bytes,
                           std::unique_ptr<TarReader>* out);
  // The next member, folders skipped; false at the end or on an error (*status: Corruption
  // naming the tar and the member after which it broke, IOError for a read).
  bool Next(TarMember* m, Status* status);

  struct State;  // libarchive's handle and the file, out of this header

 private:
  explicit TarReader(std::unique_ptr<State> s);
  std::unique_ptr<State> s_;
};

}  // namespace sluice::importers
