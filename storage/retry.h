// Which failed HTTP attempts are worth repeating, and how long to wait first (docs/remote.md,
// "What happens on each failure"). Pure functions, so they are tested without a server.
#pragma once

#include <cstdint>
#include <string>

namespace sluice::storage {

// What one attempt of a GET came to.
struct AttemptResult {
  int curl_code = 0;             // CURLcode; 0 = the transfer completed
  std::string curl_error;        // curl's message when curl_code != 0
  long http_status = 0;          // 0 = no response
  bool timed_out = false;        // no byte for timeout_ms (the fetcher's own watchdog)
  bool too_slow = false;         // under min_rate bytes/s for min_rate_s s (curl's low-speed
  uint32_t min_rate = 0;         // limit, --min-rate); `got_bytes` says how far it came
  uint32_t min_rate_s = 0;
  bool range_request = false;    // sent with a Range header: only 206 with the exact range will do
  bool range_ignored = false;    // a range request answered with 200 (the whole object): abandoned
  uint64_t want_bytes = 0;       // range requests: bytes asked for
  uint64_t got_bytes = 0;        // body bytes received
  bool content_range_ok = true;  // range requests: Content-Range names exactly the bytes asked for
};

enum class Verdict {
  kOk,        // use the body
  kRetry,     // timeouts, dropped connections, truncated or wrong bodies, 408, 429, 5xx
  kNotFound,  // 404: final
  kFail,      // other 4xx, a malformed URL, TLS verification failure...: final
};

// The verdict, and in *why a short reason for error messages ("HTTP 503", "timeout: no byte for
// 500 ms", "curl: Connection reset by peer (56)", "truncated body: 100 of 4096 bytes").
Verdict Classify(const AttemptResult& a, uint32_t timeout_ms, std::string* why);

// curl's low-speed limit over the request timeout: whole seconds, at least one.
uint32_t MinRateSeconds(uint32_t timeout_ms);

// Milliseconds to wait before attempt number `retry` (1 = the first retry): exponential from
// base_ms, capped at cap_ms, with "equal jitter" (half fixed, half uniform from `random`) so
// clients that failed together do not retry together.
uint32_t BackoffMs(int retry, uint32_t base_ms, uint32_t cap_ms, uint64_t random);

}  // namespace sluice::storage
