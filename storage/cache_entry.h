// One block cache entry: a file holding the bytes of one Read(offset, n) of one shard, with its
// own checksum (docs/formats/block_cache.md is the byte table). Writers and the reader of the
// cache use only these functions, so the layout lives in one place.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"

namespace sluice::storage {

inline constexpr char kCacheEntryMagic[8] = {'S', 'L', 'U', 'I', 'C', 'E', 'C', '1'};
inline constexpr uint64_t kCacheEntryHeaderSize = 24;  // magic, offset, length
inline constexpr uint64_t kCacheEntryTrailerSize = 8;  // xxh3 of the payload
inline constexpr uint64_t kCacheEntryOverhead = kCacheEntryHeaderSize + kCacheEntryTrailerSize;

// "<offset>+<n>" in decimal: the final name of the entry for Read(offset, n).
std::string CacheEntryName(uint64_t offset, uint64_t n);
// The inverse; false for anything else (temporary files, strays).
bool ParseCacheEntryName(const std::string& name, uint64_t* offset, uint64_t* n);
// Temporary files are "<final name>.tmp.<pid>.<sequence>": never a final name, so a reader never
// opens one, and a crash leaves only a stray the space scan deletes once it is old.
bool IsCacheTempName(const std::string& name);

enum class EntryRead { kHit, kMissing, kBad };

// Reads the entry at `path` into dst[0, n). kMissing when there is no such file; kBad (with the
// reason in *why) when its size, magic, offset, length or checksum is wrong, or its bytes are not
// the ones the reader expects (their XXH3-64 is not `xxh3`: a block of another version of the
// shard, or bytes damaged before they were cached): dst may then hold anything and the caller
// deletes the file and reads the bytes again from the remote copy.
EntryRead ReadCacheEntry(const std::string& path, uint64_t offset, uint64_t n, uint64_t xxh3,
                         char* dst, std::string* why);

// Writes the entry for Read(offset, n) == data atomically: a temporary file in the same
// directory, then rename. No fsync: a file torn by a power loss fails its checksum on the next
// read and is fetched again, which is all a cache owes.
Status WriteCacheEntry(const std::string& path, uint64_t offset, uint64_t n, const char* data);

}  // namespace sluice::storage
