// StorageCounters: what a dataset's storage did, for EpochStats (loader/stats.h). A header of its
// own because it is installed with the loader's public headers; the Storage seam is not.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sluice::shards {

// What remote storage and its block cache did so far (all zero for a local directory). Counters
// only grow; an epoch's share is the difference of two readings.
struct StorageCounters {
  uint64_t requests = 0;       // HTTP requests sent, retries included
  uint64_t bytes_fetched = 0;  // body bytes received
  uint64_t retries = 0;        // requests sent again after a timeout, 5xx or dropped connection
  uint64_t cache_hits = 0;     // reads served from the local block cache
  uint64_t cache_misses = 0;   // reads the cache did not hold (fetched remotely)
  uint64_t cache_bytes_read = 0;
  uint64_t cache_bytes_written = 0;
  uint64_t cache_corrupt = 0;  // cache entries, or fetched bytes about to become one, that failed
                               // their checksum: deleted or never cached, read again

  StorageCounters operator-(const StorageCounters& o) const;
  StorageCounters operator+(const StorageCounters& o) const;
};

// Calls v(name, field) for every counter, in declaration order: the one list that arithmetic,
// JSON (EpochStats::ToJson) and printing use.
template <class C, class V>
void VisitCounters(C& c, V&& v) {
  v("requests", c.requests);
  v("bytes_fetched", c.bytes_fetched);
  v("retries", c.retries);
  v("cache_hits", c.cache_hits);
  v("cache_misses", c.cache_misses);
  v("cache_bytes_read", c.cache_bytes_read);
  v("cache_bytes_written", c.cache_bytes_written);
  v("cache_corrupt", c.cache_corrupt);
}

inline StorageCounters StorageCounters::operator-(const StorageCounters& o) const {
  uint64_t theirs[16];  // more than the fields
  size_t i = 0;
  VisitCounters(o, [&](const char*, const uint64_t& f) { theirs[i++] = f; });
  StorageCounters d = *this;
  i = 0;
  VisitCounters(d, [&](const char*, uint64_t& f) { f -= theirs[i++]; });
  return d;
}

inline StorageCounters StorageCounters::operator+(const StorageCounters& o) const {
  uint64_t theirs[16];  // more than the fields
  size_t i = 0;
  VisitCounters(o, [&](const char*, const uint64_t& f) { theirs[i++] = f; });
  StorageCounters d = *this;
  i = 0;
  VisitCounters(d, [&](const char*, uint64_t& f) { f += theirs[i++]; });
  return d;
}

}  // namespace sluice::shards
