#include "storage/block_cache.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <system_error>

#include <nlohmann/json.hpp>

#include "shards/checksum.h"
#include "shards/manifest.h"
#include "storage/cache_entry.h"
#include "storage/cache_space.h"
#include "storage/cache_writer.h"
#include "storage/open.h"

namespace sluice::storage {
namespace fs = std::filesystem;
namespace {

// A file or directory name made of [A-Za-z0-9._-] only, not starting with '.'.
std::string Sanitize(const std::string& s, size_t max_size) {
  std::string out;
  for (char c : s.substr(0, max_size)) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    out += ok ? c : '_';
  }
  if (out.empty()) out = "dataset";
  if (out[0] == '.') out[0] = '_';
  return out;
}

std::string DatasetKey(std::string location) {
  while (location.size() > 1 && location.back() == '/') location.pop_back();
  const size_t slash = location.rfind('/');
  const std::string last = slash == std::string::npos ? location : location.substr(slash + 1);
  return Sanitize(last, 48) + "-" +
         shards::ChecksumHex(shards::Checksum(location.data(), location.size()));
}

// Same name, checksum and size: the same bytes, whichever version of the dataset holds them.
std::string ShardKey(const shards::ShardEntry& e) {
  return Sanitize(e.file, 64) + "-" + shards::ChecksumHex(e.xxh3) + "-" + std::to_string(e.bytes);
}

// What the storage and its open files share.
struct CacheState {
  CacheState(std::string dataset_dir, uint64_t budget)
      : dir(dataset_dir),
        space(std::move(dataset_dir), budget),
        writer([this](const std::string& path, uint64_t offset, uint64_t n,
                      const char* data) { Write(path, offset, n, data); },
               CacheWriter::kDefaultMaxQueued) {}

  // On the writer's thread: one entry the budget has room for (Reserve was called).
  void Write(const std::string& path, uint64_t offset, uint64_t n, const char* data) {
    Status s = WriteCacheEntry(path, offset, n, data);
    if (!s.ok()) {
      // The shard's directory may have been deleted under us (deleting the cache is allowed).
      std::error_code ec;
      fs::create_directories(fs::path(path).parent_path(), ec);
      s = WriteCacheEntry(path, offset, n, data);
    }
    // A full disk or an unwritable directory costs the copy only: the read itself succeeded.
    if (s.ok()) bytes_written.fetch_add(n, std::memory_order_relaxed);
    else space.Release(n + kCacheEntryOverhead);
  }

  const std::string dir;
  CacheSpace space;
  std::atomic<uint64_t> hits{0}, misses{0}, bytes_read{0}, bytes_written{0}, corrupt{0};
  CacheWriter writer;  // last: destroyed (drained) first, while the members it uses live
};

class CachedFile final : public RandomAccessFile {
 public:
  CachedFile(std::shared_ptr<CacheState> state, std::string shard_dir,
             std::unique_ptr<RandomAccessFile> remote)
      : state_(std::move(state)), shard_dir_(std::move(shard_dir)), remote_(std::move(remote)) {}

  // Bytes nobody vouches for (what VerifyDataset reads in chunks, a footer that manifest.json
  // records no checksum for) are never kept: they could be another version's.
  Status Read(uint64_t offset, size_t n, char* dst) const override {
    return remote_->Read(offset, n, dst);
  }

  Status ReadVerified(uint64_t offset, size_t n, uint64_t xxh3, char* dst) const override {
    if (n == 0) return remote_->ReadVerified(offset, n, xxh3, dst);
    const std::string path = EntryPath(offset, n);
    std::string why;
    // Kept, not yet on disk: a hit from the writer's queue (only checked bytes are queued).
    const EntryRead read = state_->writer.Find(path, n, dst)
                               ? EntryRead::kHit
                               : ReadCacheEntry(path, offset, n, xxh3, dst, &why);
    switch (read) {
      case EntryRead::kHit:
        state_->hits.fetch_add(1, std::memory_order_relaxed);
        state_->bytes_read.fetch_add(n, std::memory_order_relaxed);
        return Status::OK();
      case EntryRead::kBad:
        // Deleted and read again below: the cache costs a fetch, never wrong bytes.
        ::unlink(path.c_str());
        state_->space.Release(n + kCacheEntryOverhead);
        state_->corrupt.fetch_add(1, std::memory_order_relaxed);
        break;
      case EntryRead::kMissing: break;
    }
    state_->misses.fetch_add(1, std::memory_order_relaxed);
    SLUICE_RETURN_IF_ERROR(remote_->ReadVerified(offset, n, xxh3, dst));
    if (shards::Checksum(dst, n) != xxh3) {
      // A response damaged on its way (or a shard replaced under the reader) is never cached.
      // One more fetch repairs the first kind; if the bytes are still wrong they go to the
      // caller uncached, which reports them as it would without a cache.
      state_->corrupt.fetch_add(1, std::memory_order_relaxed);
      SLUICE_RETURN_IF_ERROR(remote_->ReadVerified(offset, n, xxh3, dst));
      if (shards::Checksum(dst, n) != xxh3) return Status::OK();
    }
    if (state_->space.ScanDue()) state_->writer.Drain();  // the recount sees them on disk
    if (!state_->space.Reserve(n + kCacheEntryOverhead)) return Status::OK();  // full: keep
    state_->writer.Submit(path, offset, n, dst);  // written off the read stage (cache_writer.h)
    return Status::OK();
  }

  // A range the cache holds needs no fetch; one it lacks is announced to the remote file.
  void WillNeed(uint64_t offset, size_t n) const override {
    if (n > 0) {
      const std::string path = EntryPath(offset, n);
      if (state_->writer.Pending(path) || ::access(path.c_str(), F_OK) == 0) return;
    }
    remote_->WillNeed(offset, n);
  }
  uint64_t Size() const override { return remote_->Size(); }
  const std::string& name() const override { return remote_->name(); }

 private:
  std::string EntryPath(uint64_t offset, size_t n) const {
    return shard_dir_ + "/" + CacheEntryName(offset, n);
  }

  std::shared_ptr<CacheState> state_;
  const std::string shard_dir_;
  std::unique_ptr<RandomAccessFile> remote_;
};

class CachedStorage final : public shards::Storage {
 public:
  CachedStorage(std::shared_ptr<const shards::Storage> remote, std::shared_ptr<CacheState> state)
      : remote_(std::move(remote)), state_(std::move(state)) {}

  const std::string& location() const override { return remote_->location(); }
  std::string Where(const std::string& name) const override { return remote_->Where(name); }

  // manifest.json always comes from the remote copy: its shard checksums key the entries.
  Status ReadFile(const std::string& name, std::string* out) const override {
    SLUICE_RETURN_IF_ERROR(remote_->ReadFile(name, out));
    if (name == shards::kManifestName) Learn(*out);
    return Status::OK();
  }

  Status OpenFile(const std::string& name, uint64_t expected_size,
                  std::unique_ptr<RandomAccessFile>* out) const override {
    std::unique_ptr<RandomAccessFile> file;
    SLUICE_RETURN_IF_ERROR(remote_->OpenFile(name, expected_size, &file));
    std::string key;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (!learned_) {
        lock.unlock();
        std::string manifest;
        (void)ReadFile(shards::kManifestName, &manifest);  // no manifest: nothing is cached
        lock.lock();
      }
      const auto it = keys_.find(name);
      if (it != keys_.end()) key = it->second;
    }
    std::error_code ec;
    const std::string shard_dir = state_->dir + "/" + key;
    if (key.empty() || (fs::create_directories(shard_dir, ec), ec)) {
      *out = std::move(file);  // not a shard of the manifest (or no directory): uncached
      return Status::OK();
    }
    *out = std::make_unique<CachedFile>(state_, shard_dir, std::move(file));
    return Status::OK();
  }

  // After the entries being written are on disk: the counts (and the directory) are final.
  shards::StorageCounters Counters() const override {
    state_->writer.Drain();
    shards::StorageCounters c;
    c.cache_hits = state_->hits.load(std::memory_order_relaxed);
    c.cache_misses = state_->misses.load(std::memory_order_relaxed);
    c.cache_bytes_read = state_->bytes_read.load(std::memory_order_relaxed);
    c.cache_bytes_written = state_->bytes_written.load(std::memory_order_relaxed);
    c.cache_corrupt = state_->corrupt.load(std::memory_order_relaxed);
    return remote_->Counters() + c;
  }

 private:
  // The shard keys of this version of the dataset; entries of any other version are deleted.
  void Learn(const std::string& text) const {
    std::map<std::string, std::string> keys;
    shards::Manifest m;
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    // A manifest that does not parse caches nothing (LoadManifest reports it to the caller) and
    // deletes nothing: a garbled read must not wipe what the next good run would hit.
    const bool parsed =
        !j.is_discarded() && ManifestFromJson(j, Where(shards::kManifestName), &m).ok();
    if (parsed)
      for (const shards::ShardEntry& e : m.shards) keys[e.file] = ShardKey(e);
    std::lock_guard<std::mutex> lock(mu_);
    if (learned_ && keys == keys_) return;
    learned_ = true;
    keys_ = std::move(keys);
    if (!parsed) return;
    std::set<std::string> keep;
    for (const auto& [name, key] : keys_) keep.insert(key);
    state_->space.Sweep(keep);
  }

  std::shared_ptr<const shards::Storage> remote_;
  std::shared_ptr<CacheState> state_;
  mutable std::mutex mu_;
  mutable bool learned_ = false;                     // manifest.json was read
  mutable std::map<std::string, std::string> keys_;  // shard file name -> its directory
};

std::mutex hook_mu;
StorageHook& Hook() {
  static StorageHook hook;
  return hook;
}

}  // namespace

Status WithBlockCache(std::shared_ptr<const shards::Storage> remote, const StorageOptions& options,
                      std::shared_ptr<const shards::Storage>* out) {
  const std::string dir = options.cache_dir + "/" + DatasetKey(remote->location());
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return Status::IOError(dir + ": cannot create the block cache directory: " + ec.message() +
                           " (HINT: --cache-dir names a writable local directory; \"\" for no "
                           "cache)");
  *out = std::make_shared<CachedStorage>(std::move(remote),
                                         std::make_shared<CacheState>(dir, options.cache_bytes));
  return Status::OK();
}

Status CacheRemoteStorage(const std::string& location, const StorageOptions& options,
                          std::shared_ptr<const shards::Storage>* storage) {
  // SLUICE_CACHE_LOCAL=1 caches local directories too: for measuring the cache against the
  // same dataset read from local disk (docs/remote.md), never a production setting.
  const char* cache_local = std::getenv("SLUICE_CACHE_LOCAL");
  bool remote = IsRemote(location) || (cache_local && std::string(cache_local) == "1");
  {
    std::lock_guard<std::mutex> lock(hook_mu);
    if (Hook()) {
      *storage = Hook()(std::move(*storage));
      remote = true;
    }
  }
  if (!remote || options.cache_dir.empty()) return Status::OK();
  return WithBlockCache(std::move(*storage), options, storage);
}

void SetStorageHookForTesting(StorageHook hook) {
  std::lock_guard<std::mutex> lock(hook_mu);
  Hook() = std::move(hook);
}

}  // namespace sluice::storage
