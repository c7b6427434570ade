// Lines of a text file, plain or gzip-compressed (a name ending in ".gz"; concatenated gzip
// members as `cat a.gz b.gz` makes them are read through), read in chunks through base/sysio.h
// so a large manifest costs a chunk of memory, not its size, and faults can be injected.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"

namespace sluice::importers {

class TextLines {
 public:
  virtual ~TextLines() = default;
  // NotFound for a missing file; InvalidArgument for a FIFO or directory (base/sysio.h).
  static Status Open(const std::string& path, std::unique_ptr<TextLines>* out);
  // The next line without "\n" or "\r\n"; false at the end or on an error (*status: IOError
  // for a read, Corruption naming the compressed offset for damaged or cut-off gzip data).
  virtual bool Next(std::string* line, Status* status) = 0;
};

// Inflates a whole gzip stream held in memory (the fuzzer's and the tests' entry point): the
// same decoder TextLines uses. Corruption naming `name` and the offset when damaged.
Status GunzipString(const std::string& name, const std::string& gz, std::string* out);

}  // namespace sluice::importers
