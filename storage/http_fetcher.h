// HttpFetcher: GETs of byte ranges and whole objects for one remote dataset, on one background
// thread driving a curl multi handle (docs/remote.md).
//
// - ReadRange(url, offset, n) returns exactly those bytes: from a range Prefetch announced (it
//   waits if that request is still in flight) or else from a request sent now. Each request is
//   one "Range: bytes=a-b" GET; only a 206 with exactly n bytes and the matching Content-Range is
//   used. Anything else is retried (RetryPolicy in retry.h) and in the end is an IOError naming
//   the URL, the byte range, the last HTTP status or curl error and the number of attempts.
// - Prefetch queues a range; at most `requests_in_flight` transfers run at once, over
//   connections the multi handle keeps alive and reuses. Fetched ranges wait in memory until
//   read; their bytes are bounded by `max_held_bytes`: a hint that does not fit is dropped (the
//   range is then fetched when read), after first discarding leftovers of ranges already
//   partly read.
// - A range may be read in pieces (a shard's tail holds its footer and index); it is released
//   once every byte of it was read.
//
// Thread-safety: every method may be called from many threads.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "shards/storage_counters.h"

namespace sluice::storage {

struct FetcherOptions {
  int requests_in_flight = 16;
  int retries = 6;              // attempts after the first
  uint32_t timeout_ms = 30000;  // no byte for this long: the attempt failed
  uint32_t min_rate = 1024;     // fewer bytes/s than this over timeout_ms (whole seconds, at
                                // least 1): the attempt failed (0 = no minimum)
  uint32_t backoff_base_ms = 100;
  uint32_t backoff_cap_ms = 5000;
  uint64_t max_held_bytes = 256ull << 20;  // fetched or in-flight prefetched bytes not yet read
  std::vector<std::string> headers;        // sent with every request ("x-amz-security-token: ...")
  std::string aws_sigv4;                   // CURLOPT_AWS_SIGV4 ("aws:amz:us-east-1:s3"), "" = none
  std::string userpwd;                     // "key:secret" for SigV4
};

class HttpFetcher {
 public:
  static Status Create(const FetcherOptions& options, std::unique_ptr<HttpFetcher>* out);
  ~HttpFetcher();  // abandons queued and running requests and joins the thread

  void Prefetch(const std::string& url, uint64_t offset, size_t n);
  Status ReadRange(const std::string& url, uint64_t offset, size_t n, char* dst);
  // Drops the fetched range that served [offset, offset + n) of `url`, so the next ReadRange of
  // it sends a new request: for bytes the caller found damaged (a wrong checksum) in a range
  // that holds more than they (a shard's tail), which would otherwise serve them again.
  void Forget(const std::string& url, uint64_t offset, size_t n);
  // The whole object (a GET without Range, 200). NotFound on 404.
  Status ReadWhole(const std::string& url, std::string* out);

  shards::StorageCounters Counters() const;
  uint64_t hints_dropped() const { return hints_dropped_.load(); }

  struct Job;  // one request and its retries (http_fetcher.cc)

 private:
  explicit HttpFetcher(const FetcherOptions& options);
  void Loop();
  void Enqueue(std::shared_ptr<Job> job, bool urgent);
  // Queues `job` ahead of the hints and wakes the transfer thread (mu_ held by *l, released
  // meanwhile).
  void FetchNow(const std::shared_ptr<Job>& job, std::unique_lock<std::mutex>* l);
  // Waits for `job`; an IOError naming `url` if the storage closed first (mu_ held by *l).
  Status AwaitDone(const std::shared_ptr<Job>& job, const std::string& url,
                   std::unique_lock<std::mutex>* l);
  void EvictLeftoversLocked(uint64_t need);
  void StartReadyLocked();
  void Finish(Job* job);
  void Release(const std::shared_ptr<Job>& job);

  const FetcherOptions options_;
  void* multi_ = nullptr;  // CURLM*; curl stays out of this header
  std::thread thread_;

  std::mutex mu_;
  std::condition_variable done_cv_;
  bool stop_ = false;
  // Prefetched ranges by (url, offset), until fully read.
  std::map<std::pair<std::string, uint64_t>, std::shared_ptr<Job>> ranges_;
  uint64_t held_bytes_ = 0;
  std::deque<std::shared_ptr<Job>> queue_;     // waiting for a transfer slot
  std::vector<std::shared_ptr<Job>> delayed_;  // waiting out a backoff
  std::vector<std::shared_ptr<Job>> running_;
  std::vector<void*> idle_handles_;  // CURL* easy handles to reuse
  uint64_t rng_state_ = 0x9e3779b97f4a7c15ull;

  std::atomic<uint64_t> requests_{0}, bytes_fetched_{0}, retries_{0}, hints_dropped_{0};
};

}  // namespace sluice::storage
