// The local block cache (docs/remote.md, "Block cache"): a Storage wrapper whose files serve each
// Read(offset, n) from a file in a local directory when it holds that range (a hit), else from
// the wrapped storage, keeping a copy (a miss). It works over any Storage; OpenStorage puts it
// over remote ones when StorageOptions::cache_dir is set. Local directories are never cached.
//
// Layout: cache_dir/<dataset key>/<shard key>/<offset>+<n>, one file per range read:
//   dataset key  the location's last path component and the xxh3 of the whole location, so each
//                dataset URL has its own directory and its own budget;
//   shard key    the shard's file name, its xxh3 and its size from manifest.json. A dataset
//                rewritten at the same URL has new shard checksums, so no entry of the old version
//                is ever read; the old shard directories are deleted when the new manifest is
//                read. Only shards manifest.json lists are cached (other files pass through).
// The cache reads manifest.json (through ReadFile, never cached) to learn the shard keys.
//
// Only bytes a reader vouches for are kept: a RandomAccessFile::ReadVerified (a shard's header,
// footer, index and blocks, each with the XXH3-64 the shard reader knows for it; the footer's
// comes from manifest.json) is kept only when the fetched bytes have that checksum, and served
// only while they still do. A fetch that fails the check (a response damaged on the wire, a
// shard of another version of the dataset) is counted (StorageCounters::cache_corrupt), never
// cached, and fetched once more; a plain Read passes through uncached. So a bad response costs
// one more request, not every later run, and an entry cached by an older sluice that fails the
// check is dropped and fetched again. Every entry also carries its own checksum
// (storage/cache_entry.h); one that fails is deleted, counted (cache_corrupt) and read again
// from the wrapped storage, so the cache never turns into wrong data. Writes are atomic (temporary
// file, rename) and done by a thread per dataset, off the loader's read stage (cache_writer.h);
// Counters() waits for them. Several processes may share a cache directory. Everything cached has
// its remote copy, so any entry (or the whole directory) may be deleted at any time: it costs a
// miss, never data.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "base/status.h"
#include "shards/storage.h"
#include "storage/options.h"

namespace sluice::storage {

// `remote` behind the block cache at options.cache_dir (must not be empty) with the budget
// options.cache_bytes. IOError naming the directory when it cannot be created.
// Counters() sums the wrapped storage's and the cache's.
Status WithBlockCache(std::shared_ptr<const shards::Storage> remote, const StorageOptions& options,
                      std::shared_ptr<const shards::Storage>* out);

// What OpenStorage calls on the storage it opened at `location`: wraps it in the block cache when
// the location is remote and options.cache_dir is set; otherwise leaves it alone. The environment
// variable SLUICE_CACHE_LOCAL=1 caches local directories too, to measure the cache against local
// disk (sluice-bench epoch); never needed in production.
Status CacheRemoteStorage(const std::string& location, const StorageOptions& options,
                          std::shared_ptr<const shards::Storage>* storage);

// Tests only: while set, CacheRemoteStorage first replaces every storage with hook(storage) and
// treats the result as remote, so a local dataset behind a fake remote (counting reads, adding
// latency or failures) is cached as a URL would be. Pass {} to clear. Not thread-safe against
// concurrent OpenStorage calls: set it before opening.
using StorageHook =
    std::function<std::shared_ptr<const shards::Storage>(std::shared_ptr<const shards::Storage>)>;
void SetStorageHookForTesting(StorageHook hook);

}  // namespace sluice::storage
