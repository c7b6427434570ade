// StorageOptions: how datasets on object storage are read and cached (docs/remote.md). Every
// field is "how": the bytes a dataset yields are the same from a URL as from local disk.
#pragma once

#include <cstdint>
#include <string>

#include "../base/fields.h"

namespace sluice::storage {

struct StorageOptions {
  std::string endpoint;   // s3:// only: the S3 endpoint URL ("" = $AWS_ENDPOINT_URL, else AWS's
                          // regional endpoint)
  std::string region;     // s3:// only: signing region ("" = $AWS_REGION, $AWS_DEFAULT_REGION,
                          // ~/.aws/config, else us-east-1)
  std::string cache_dir;  // local block cache directory ("" = no cache); one subdirectory per
                          // dataset URL
  uint64_t cache_bytes = 0;     // the cache's size budget per dataset (0 = no cap)
  int requests_in_flight = 16;  // concurrent HTTP requests per dataset
  uint32_t read_ahead = 64;     // blocks the loader announces ahead of its read stage, so their
                                // requests are in flight before they are needed (remote only)
  int retries = 6;              // attempts after the first, with exponential backoff, on timeouts,
                                // 5xx, dropped connections and truncated bodies
  uint32_t timeout_ms = 30000;  // per request: no byte for this long is a timeout
  uint32_t min_rate = 1024;     // bytes/s an attempt must keep up, measured over
                                // --request-timeout (whole seconds), else it failed (0 = no
                                // minimum): a server trickling bytes never falls silent
};

template <OptionsOf<StorageOptions> O, class V>
void VisitFields(O& o, V&& v) {
  using enum Affects;
  v(FieldInfo{"endpoint", "--s3-endpoint", "S3 endpoint URL (default: $AWS_ENDPOINT_URL or AWS)",
              kHow},
    o.endpoint);
  v(FieldInfo{"region", "--s3-region", "S3 signing region (default: $AWS_REGION or us-east-1)",
              kHow},
    o.region);
  v(FieldInfo{"cache_dir", "--cache-dir", "local block cache for remote datasets (\"\" = none)",
              kHow},
    o.cache_dir);
  v(FieldInfo{"cache_bytes", "--cache-size", "block cache budget per dataset, bytes (0 = no cap)",
              kHow},
    o.cache_bytes);
  v(FieldInfo{"requests_in_flight", "--requests", "concurrent HTTP requests per dataset", kHow, 1,
              1024},
    o.requests_in_flight);
  v(FieldInfo{"read_ahead", "--read-ahead", "blocks requested ahead of the read stage (remote)",
              kHow, 0, 1 << 20},
    o.read_ahead);
  v(FieldInfo{"retries", "--retries", "retries of a failed HTTP request", kHow, 0, 100},
    o.retries);
  v(FieldInfo{"timeout_ms", "--request-timeout", "ms without a byte before a request is retried",
              kHow, 1},
    o.timeout_ms);
  v(FieldInfo{"min_rate", "--min-rate",
              "bytes/s a response must keep up over --request-timeout, else it is retried (0 = "
              "no minimum)",
              kHow},
    o.min_rate);
}

}  // namespace sluice::storage
