// libFuzzer target for the shard reader: any byte string handed to
// ShardReader must yield a Status, never a crash, a hang or an out-of-bounds
// access. Build: CXX=clang++ meson setup build-fuzz -Dfuzz=true -Db_sanitize=address,undefined
//                ninja -C build-fuzz tests/fuzz/shard_reader_fuzzer
// Run:   build-fuzz/tests/fuzz/shard_reader_fuzzer -max_len=65536 corpus/
// A few valid shards as seeds help it go deep: shardify a tiny corpus and copy its shards in.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "base/file.h"
#include "shards/record.h"
#include "shards/shard_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice::shards;
  std::unique_ptr<ShardReader> reader;
  for (bool verify : {true, false}) {
    if (!ShardReader::Open(
             sluice::NewMemoryFile("fuzz.sluice",
                                   std::string(reinterpret_cast<const char*>(data), size)),
             ReadOptions{verify}, &reader)
             .ok()) {
      return 0;
    }
    Buffer scratch, raw;
    RecordView view;
    for (size_t b = 0; b < reader->num_blocks(); ++b) {
      if (!reader->ReadBlock(b, &scratch, &raw).ok()) continue;
      for (size_t i = reader->first_record(b); i < reader->first_record(b + 1); ++i) {
        std::string_view p = reader->RecordPayload(i, raw);
        (void)ParseRecord(p.data(), p.size(), "fuzz", &view);
        (void)reader->key(i);
      }
    }
  }
  return 0;
}
