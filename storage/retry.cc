#include "storage/retry.h"

#include <curl/curl.h>

#include <algorithm>

namespace sluice::storage {

Verdict Classify(const AttemptResult& a, uint32_t timeout_ms, std::string* why) {
  if (a.timed_out) {
    *why = "timeout: no byte for " + std::to_string(timeout_ms) + " ms";
    return Verdict::kRetry;
  }
  if (a.too_slow) {
    // A server that trickles bytes is as stuck as a silent one, and as likely to recover on
    // another connection.
    *why = "too slow: under " + std::to_string(a.min_rate) + " bytes/s for " +
           std::to_string(a.min_rate_s) + " s (" + std::to_string(a.got_bytes) +
           (a.range_request ? " of " + std::to_string(a.want_bytes) : std::string()) +
           " bytes received; HINT: --min-rate sets the minimum, 0 for none)";
    return Verdict::kRetry;
  }
  if (a.curl_code == CURLE_UNSUPPORTED_PROTOCOL &&
      a.curl_error.find("HTTP/0.9") != std::string::npos) {
    // curl's words for an answer that does not start with an HTTP status line: a response cut
    // short or garbled on its way (a dying proxy), not a protocol this URL could never speak.
    *why = "malformed response: no HTTP status line (cut short or garbled; curl: " + a.curl_error +
           ")";
    return Verdict::kRetry;
  }
  if (a.range_ignored) {
    *why = "HTTP " + std::to_string(a.http_status) +
           " with the whole object instead of 206 with the range asked for";
    return Verdict::kRetry;
  }
  if (a.curl_code != CURLE_OK && a.curl_code != CURLE_WRITE_ERROR) {
    *why = "curl: " + a.curl_error + " (" + std::to_string(a.curl_code) + ")";
    switch (a.curl_code) {
      // The request can never succeed as it stands: retrying only delays the error.
      case CURLE_UNSUPPORTED_PROTOCOL:
      case CURLE_URL_MALFORMAT:
      case CURLE_NOT_BUILT_IN:
      case CURLE_PEER_FAILED_VERIFICATION:
      case CURLE_SSL_CERTPROBLEM:
      case CURLE_SSL_CACERT_BADFILE:
      case CURLE_TOO_MANY_REDIRECTS:
      case CURLE_LOGIN_DENIED: return Verdict::kFail;
      default:  // connect/recv/send errors, resets, empty replies, partial files, DNS hiccups
        return Verdict::kRetry;
    }
  }
  const long s = a.http_status;
  if (s == 408 || s == 429 || s >= 500) {
    *why = "HTTP " + std::to_string(s);
    return Verdict::kRetry;
  }
  if (s == 404) {
    *why = "HTTP 404 (not found)";
    return Verdict::kNotFound;
  }
  if (s >= 300) {
    *why = "HTTP " + std::to_string(s);
    return Verdict::kFail;
  }
  if (a.range_request) {
    if (s != 206) {
      *why = "HTTP " + std::to_string(s) + " to a range request (206 expected)";
      return Verdict::kRetry;
    }
    if (a.got_bytes != a.want_bytes) {
      *why = "wrong body length: " + std::to_string(a.got_bytes) + " of " +
             std::to_string(a.want_bytes) + " bytes";
      return Verdict::kRetry;
    }
    if (!a.content_range_ok) {
      *why = "Content-Range does not match the range asked for";
      return Verdict::kRetry;
    }
  } else if (a.curl_code == CURLE_WRITE_ERROR) {
    *why = "curl: " + a.curl_error;
    return Verdict::kFail;
  }
  return Verdict::kOk;
}

uint32_t MinRateSeconds(uint32_t timeout_ms) {
  return std::max<uint32_t>(1, (timeout_ms + 999) / 1000);
}

uint32_t BackoffMs(int retry, uint32_t base_ms, uint32_t cap_ms, uint64_t random) {
  const int shift = std::clamp(retry - 1, 0, 20);
  const uint64_t d = std::min<uint64_t>(cap_ms, uint64_t{base_ms} << shift);
  const uint64_t half = d / 2;
  return static_cast<uint32_t>(half + (half == 0 ? 0 : random % (d - half + 1)));
}

}  // namespace sluice::storage
