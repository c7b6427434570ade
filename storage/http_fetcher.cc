#include "storage/http_fetcher.h"

#include <curl/curl.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>

#include "storage/retry.h"
#include "storage/url.h"

namespace sluice::storage {

using Clock = std::chrono::steady_clock;

struct HttpFetcher::Job {
  std::string url;
  uint64_t offset = 0;
  uint64_t size = 0;   // range requests: the bytes asked for
  bool whole = false;  // a GET of the whole object
  bool held = false;   // a prefetched range: in ranges_, counted in held_bytes_
  enum class State { kQueued, kRunning, kDone } state = State::kQueued;
  Status status;
  std::string body;
  uint64_t consumed = 0;  // bytes of a held range read so far
  int attempts = 0;
  Clock::time_point not_before;  // end of the backoff before the next attempt

  // The attempt in progress (loop thread only).
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  Clock::time_point last_byte;
  AttemptResult result;
  std::string content_range;
  std::string error_body;  // the start of an error response (S3 says why in it)
  char errbuf[CURL_ERROR_SIZE] = {};
  std::atomic<uint64_t>* bytes_fetched = nullptr;
};

namespace {

constexpr uint64_t kMaxWholeObject = 1ull << 30;  // manifest.json; more is not a manifest
constexpr size_t kMaxErrorBody = 2048;

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

size_t OnBody(char* data, size_t size, size_t nmemb, void* user) {
  auto* job = static_cast<HttpFetcher::Job*>(user);
  const size_t n = size * nmemb;
  job->last_byte = Clock::now();
  job->bytes_fetched->fetch_add(n, std::memory_order_relaxed);
  long status = 0;
  curl_easy_getinfo(job->easy, CURLINFO_RESPONSE_CODE, &status);
  job->result.http_status = status;
  const long ok_status = job->whole ? 200 : 206;
  if (status != ok_status) {
    if (!job->whole && status == 200) {
      job->result.range_ignored = true;  // the whole object is on its way: abandon it
      return 0;
    }
    const size_t keep =
        std::min(n, kMaxErrorBody - std::min(kMaxErrorBody, job->error_body.size()));
    job->error_body.append(data, keep);
    return n;
  }
  job->result.got_bytes += n;
  const uint64_t cap = job->whole ? kMaxWholeObject : job->size;
  if (job->body.size() + n > cap) return 0;  // longer than asked for: a wrong answer
  job->body.append(data, n);
  return n;
}

size_t OnHeader(char* data, size_t size, size_t nmemb, void* user) {
  auto* job = static_cast<HttpFetcher::Job*>(user);
  const size_t n = size * nmemb;
  job->last_byte = Clock::now();
  std::string_view line(data, n);
  constexpr std::string_view kName = "content-range:";
  if (line.size() > kName.size() && strncasecmp(line.data(), kName.data(), kName.size()) == 0) {
    line.remove_prefix(kName.size());
    while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    job->content_range = std::string(line);
  }
  return n;
}

// S3 names the reason for a 4xx in <Code>...</Code>; nginx in a title. Either helps.
std::string ErrorDetail(const std::string& body) {
  for (const auto& [open, close] : {std::pair{"<Code>", "</Code>"}, {"<title>", "</title>"}}) {
    const size_t a = body.find(open);
    if (a == std::string::npos) continue;
    const size_t start = a + std::strlen(open), b = body.find(close, start);
    if (b != std::string::npos && b - start < 200) return body.substr(start, b - start);
  }
  return "";
}

}  // namespace

Status HttpFetcher::Create(const FetcherOptions& options, std::unique_ptr<HttpFetcher>* out) {
  GlobalInit();
  std::unique_ptr<HttpFetcher> f(new HttpFetcher(options));
  f->multi_ = curl_multi_init();
  if (f->multi_ == nullptr) return Status::IOError("curl_multi_init failed");
  f->thread_ = std::thread([p = f.get()] { p->Loop(); });
  *out = std::move(f);
  return Status::OK();
}

HttpFetcher::HttpFetcher(const FetcherOptions& options) : options_(options) {}

HttpFetcher::~HttpFetcher() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  if (multi_ != nullptr) curl_multi_wakeup(static_cast<CURLM*>(multi_));
  if (thread_.joinable()) thread_.join();
  for (auto& job : running_) {
    curl_multi_remove_handle(static_cast<CURLM*>(multi_), job->easy);
    curl_easy_cleanup(job->easy);
    curl_slist_free_all(job->headers);
  }
  for (void* h : idle_handles_) curl_easy_cleanup(static_cast<CURL*>(h));
  if (multi_ != nullptr) curl_multi_cleanup(static_cast<CURLM*>(multi_));
}

shards::StorageCounters HttpFetcher::Counters() const {
  shards::StorageCounters c;
  c.requests = requests_.load();
  c.bytes_fetched = bytes_fetched_.load();
  c.retries = retries_.load();
  return c;
}

void HttpFetcher::Enqueue(std::shared_ptr<Job> job, bool urgent) {
  // Caller holds mu_.
  if (urgent) {
    queue_.push_front(std::move(job));
  } else {
    queue_.push_back(std::move(job));
  }
}

void HttpFetcher::EvictLeftoversLocked(uint64_t need) {
  for (auto it = ranges_.begin();
       it != ranges_.end() && held_bytes_ + need > options_.max_held_bytes;) {
    Job& j = *it->second;
    if (j.state == Job::State::kDone && j.consumed > 0) {
      held_bytes_ -= j.size;
      j.held = false;
      it = ranges_.erase(it);
    } else {
      ++it;
    }
  }
}

void HttpFetcher::Prefetch(const std::string& url, uint64_t offset, size_t n) {
  if (n == 0) return;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stop_) return;
    // Already announced (a shard's tail covers its last blocks)?
    auto it = ranges_.upper_bound({url, offset});
    for (int k = 0; k < 8 && it != ranges_.begin(); ++k) {
      --it;
      if (it->first.first != url) break;
      const Job& j = *it->second;
      if (j.offset <= offset && offset + n <= j.offset + j.size) return;
    }
    if (held_bytes_ + n > options_.max_held_bytes) EvictLeftoversLocked(n);
    if (held_bytes_ + n > options_.max_held_bytes) {
      hints_dropped_.fetch_add(1);
      return;
    }
    auto job = std::make_shared<Job>();
    job->url = url;
    job->offset = offset;
    job->size = n;
    job->held = true;
    auto [pos, inserted] = ranges_.emplace(std::pair{url, offset}, job);
    if (!inserted) {  // a shorter range at the same offset: keep it, fetch this one on demand
      hints_dropped_.fetch_add(1);
      return;
    }
    held_bytes_ += n;
    Enqueue(std::move(job), /*urgent=*/false);
  }
  curl_multi_wakeup(static_cast<CURLM*>(multi_));
}

void HttpFetcher::Release(const std::shared_ptr<Job>& job) {
  // Caller holds mu_.
  if (!job->held) return;
  auto it = ranges_.find({job->url, job->offset});
  if (it != ranges_.end() && it->second == job) ranges_.erase(it);
  held_bytes_ -= job->size;
  job->held = false;
}

Status HttpFetcher::ReadRange(const std::string& url, uint64_t offset, size_t n, char* dst) {
  if (n == 0) return Status::OK();
  std::unique_lock<std::mutex> l(mu_);
  std::shared_ptr<Job> job;
  auto it = ranges_.upper_bound({url, offset});
  for (int k = 0; k < 8 && it != ranges_.begin(); ++k) {
    --it;
    if (it->first.first != url) break;
    const Job& j = *it->second;
    if (j.offset <= offset && offset + n <= j.offset + j.size) {
      job = it->second;
      break;
    }
  }
  if (job == nullptr) {  // never announced, or dropped: fetch it now, ahead of the hints
    job = std::make_shared<Job>();
    job->url = url;
    job->offset = offset;
    job->size = n;
    FetchNow(job, &l);
  }
  SLUICE_RETURN_IF_ERROR(AwaitDone(job, url, &l));
  if (!job->status.ok()) {
    Release(job);
    return job->status;
  }
  std::memcpy(dst, job->body.data() + (offset - job->offset), n);
  job->consumed += n;
  if (job->consumed >= job->size) Release(job);
  return Status::OK();
}

void HttpFetcher::Forget(const std::string& url, uint64_t offset, size_t n) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = ranges_.upper_bound({url, offset});
  for (int k = 0; k < 8 && it != ranges_.begin(); ++k) {
    --it;
    if (it->first.first != url) break;
    const std::shared_ptr<Job> job = it->second;
    if (job->state == Job::State::kDone && job->offset <= offset &&
        offset + n <= job->offset + job->size) {
      Release(job);
      return;
    }
  }
}

Status HttpFetcher::ReadWhole(const std::string& url, std::string* out) {
  auto job = std::make_shared<Job>();
  job->url = url;
  job->whole = true;
  std::unique_lock<std::mutex> l(mu_);
  FetchNow(job, &l);
  SLUICE_RETURN_IF_ERROR(AwaitDone(job, url, &l));
  if (!job->status.ok()) return job->status;
  *out = std::move(job->body);
  return Status::OK();
}

void HttpFetcher::FetchNow(const std::shared_ptr<Job>& job, std::unique_lock<std::mutex>* l) {
  Enqueue(job, /*urgent=*/true);
  l->unlock();
  curl_multi_wakeup(static_cast<CURLM*>(multi_));
  l->lock();
}

Status HttpFetcher::AwaitDone(const std::shared_ptr<Job>& job, const std::string& url,
                              std::unique_lock<std::mutex>* l) {
  done_cv_.wait(*l, [&] { return job->state == Job::State::kDone || stop_; });
  if (job->state != Job::State::kDone)
    return Status::IOError(RedactUrl(url) + ": the storage was closed while a read waited");
  return Status::OK();
}

void HttpFetcher::StartReadyLocked() {
  const auto now = Clock::now();
  // Retries whose backoff is over go first: they are older than anything queued.
  for (auto it = delayed_.begin(); it != delayed_.end();) {
    if ((*it)->not_before <= now) {
      queue_.push_front(std::move(*it));
      it = delayed_.erase(it);
    } else {
      ++it;
    }
  }
  while (!queue_.empty() && static_cast<int>(running_.size()) < options_.requests_in_flight) {
    std::shared_ptr<Job> job = std::move(queue_.front());
    queue_.pop_front();
    CURL* easy;
    if (!idle_handles_.empty()) {
      easy = static_cast<CURL*>(idle_handles_.back());
      idle_handles_.pop_back();
      curl_easy_reset(easy);
    } else {
      easy = curl_easy_init();
    }
    job->easy = easy;
    job->state = Job::State::kRunning;
    job->attempts++;
    job->result = AttemptResult{};
    job->result.range_request = !job->whole;
    job->result.want_bytes = job->size;
    job->body.clear();
    if (!job->whole) job->body.reserve(job->size);
    job->content_range.clear();
    job->error_body.clear();
    job->errbuf[0] = 0;
    job->last_byte = now;
    job->bytes_fetched = &bytes_fetched_;
    for (const std::string& h : options_.headers)
      job->headers = curl_slist_append(job->headers, h.c_str());
    if (!job->whole) {
      const std::string range = "Range: " + RangeHeaderValue(job->offset, job->size);
      job->headers = curl_slist_append(job->headers, range.c_str());
    }
    curl_easy_setopt(easy, CURLOPT_URL, job->url.c_str());
    curl_easy_setopt(easy, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, job->headers);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, OnBody);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, job.get());
    curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, OnHeader);
    curl_easy_setopt(easy, CURLOPT_HEADERDATA, job.get());
    curl_easy_setopt(easy, CURLOPT_PRIVATE, job.get());
    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, job->errbuf);
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
    // Blocks are ~1 MiB: fewer, larger write callbacks than curl's default 16 KiB.
    curl_easy_setopt(easy, CURLOPT_BUFFERSIZE, 256L << 10);
    curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.timeout_ms));
    if (options_.min_rate > 0) {
      curl_easy_setopt(easy, CURLOPT_LOW_SPEED_LIMIT, static_cast<long>(options_.min_rate));
      curl_easy_setopt(easy, CURLOPT_LOW_SPEED_TIME,
                       static_cast<long>(MinRateSeconds(options_.timeout_ms)));
    }
    if (options_.aws_sigv4.empty()) {
      // A signed request cannot follow a redirect (the signature names the host).
      curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 1L);
      curl_easy_setopt(easy, CURLOPT_MAXREDIRS, 5L);
    } else {
      curl_easy_setopt(easy, CURLOPT_AWS_SIGV4, options_.aws_sigv4.c_str());
      if (!options_.userpwd.empty())
        curl_easy_setopt(easy, CURLOPT_USERPWD, options_.userpwd.c_str());
    }
    requests_.fetch_add(1, std::memory_order_relaxed);
    curl_multi_add_handle(static_cast<CURLM*>(multi_), easy);
    running_.push_back(std::move(job));
  }
}

// Called on the loop thread when an attempt ended (job->result filled in, handle removed).
void HttpFetcher::Finish(Job* job) {
  curl_slist_free_all(job->headers);
  job->headers = nullptr;
  idle_handles_.push_back(job->easy);
  job->easy = nullptr;
  std::shared_ptr<Job> self;
  for (auto it = running_.begin(); it != running_.end(); ++it) {
    if (it->get() == job) {
      self = std::move(*it);
      running_.erase(it);
      break;
    }
  }
  AttemptResult& r = job->result;
  if (!job->whole && r.http_status == 206 && r.got_bytes == r.want_bytes) {
    uint64_t first = 0, last = 0;
    r.content_range_ok = ParseContentRange(job->content_range, &first, &last) &&
                         first == job->offset && last == job->offset + job->size - 1;
  }
  std::string why;
  // curl's low-speed limit ends a transfer with "Operation too slow" (CURLE_OPERATION_TIMEDOUT,
  // which a connect timeout shares).
  if (r.curl_code == CURLE_OPERATION_TIMEDOUT && options_.min_rate > 0 &&
      r.curl_error.find("too slow") != std::string::npos) {
    r.too_slow = true;
    r.min_rate = options_.min_rate;
    r.min_rate_s = MinRateSeconds(options_.timeout_ms);
  }
  const Verdict v = Classify(r, options_.timeout_ms, &why);
  std::lock_guard<std::mutex> l(mu_);
  if (v == Verdict::kRetry && job->attempts <= options_.retries) {
    rng_state_ += 0x9e3779b97f4a7c15ull;
    uint64_t z = rng_state_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    const uint32_t wait =
        BackoffMs(job->attempts, options_.backoff_base_ms, options_.backoff_cap_ms, z ^ (z >> 31));
    job->not_before = Clock::now() + std::chrono::milliseconds(wait);
    job->state = Job::State::kQueued;
    retries_.fetch_add(1, std::memory_order_relaxed);
    delayed_.push_back(std::move(self));
    return;
  }
  if (v != Verdict::kOk) {
    const std::string detail = ErrorDetail(job->error_body);
    std::string msg = "GET " + RedactUrl(job->url);
    if (!job->whole) msg += " (" + RangeHeaderValue(job->offset, job->size) + ")";
    msg += ": " + why + (detail.empty() ? "" : " " + detail) + ", after " +
           std::to_string(job->attempts) + (job->attempts == 1 ? " attempt" : " attempts");
    job->status = v == Verdict::kNotFound ? Status::NotFound(msg) : Status::IOError(msg);
    job->body.clear();
    job->body.shrink_to_fit();
  }
  job->state = Job::State::kDone;
  done_cv_.notify_all();
}

void HttpFetcher::Loop() {
  CURLM* multi = static_cast<CURLM*>(multi_);
  // The watchdog's resolution: a stalled transfer is noticed within a quarter of the timeout.
  const int tick_ms = static_cast<int>(std::clamp<uint32_t>(options_.timeout_ms / 4, 5, 200));
  for (;;) {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (stop_) break;
      StartReadyLocked();
    }
    int still = 0;
    curl_multi_perform(multi, &still);
    int queued = 0;
    while (CURLMsg* m = curl_multi_info_read(multi, &queued)) {
      if (m->msg != CURLMSG_DONE) continue;
      Job* job = nullptr;
      curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, reinterpret_cast<char**>(&job));
      const CURLcode code = m->data.result;
      curl_multi_remove_handle(multi, m->easy_handle);
      long status = 0;
      curl_easy_getinfo(job->easy, CURLINFO_RESPONSE_CODE, &status);
      job->result.http_status = status;
      job->result.curl_code = code;
      job->result.curl_error = job->errbuf[0] ? job->errbuf : curl_easy_strerror(code);
      Finish(job);
    }
    const auto now = Clock::now();
    std::vector<Job*> stalled;
    for (auto& job : running_) {
      if (now - job->last_byte > std::chrono::milliseconds(options_.timeout_ms))
        stalled.push_back(job.get());
    }
    for (Job* job : stalled) {
      curl_multi_remove_handle(multi, job->easy);
      job->result.timed_out = true;
      Finish(job);
    }
    int wait_ms = 1000;
    {
      std::lock_guard<std::mutex> l(mu_);
      if (stop_) break;
      if (!running_.empty()) wait_ms = tick_ms;
      for (const auto& job : delayed_) {
        const auto d = std::chrono::duration_cast<std::chrono::milliseconds>(job->not_before - now);
        wait_ms = std::clamp<int>(static_cast<int>(d.count()) + 1, 0, wait_ms);
      }
      if (!queue_.empty() && static_cast<int>(running_.size()) < options_.requests_in_flight)
        wait_ms = 0;
    }
    curl_multi_poll(multi, nullptr, 0, wait_ms, nullptr);
  }
  std::lock_guard<std::mutex> l(mu_);
  done_cv_.notify_all();
}

}  // namespace sluice::storage
