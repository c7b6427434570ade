// Where a remote dataset's files are fetched from: the request URL of each file for
// `http(s)://host/prefix` and `s3://bucket/prefix` locations (docs/remote.md).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace sluice::storage {

struct RemoteLocation {
  enum class Kind { kHttp, kS3 };
  Kind kind = Kind::kHttp;
  std::string location;  // as the user gave it, without trailing slashes, password redacted
                         // (RedactUrl): what messages show
  std::string base;      // http(s): the URL prefix, no trailing slash (with its user info)
  std::string bucket;    // s3 only
  std::string prefix;    // s3 only: the key prefix, no leading or trailing slash ("" = bucket root)
};

// `text` with the credentials of every URL in it hidden: the password of "scheme://user:pass@host"
// becomes "***" ("http://user:***@host/x"), and user info without a password, a token as in
// "https://TOKEN@host/x", becomes "***" as a whole. Everything else (local paths, URLs without user
// info, s3:// locations) is unchanged, and redacting twice changes nothing. Every message, banner
// and run record that shows a location shows it through this, so that a training log never holds
// a password.
std::string RedactUrl(std::string_view text);

// Parses "http://host[:port]/prefix", "https://..." or "s3://bucket[/prefix]". InvalidArgument
// (naming the location and what is wrong) for anything else.
Status ParseRemoteLocation(std::string_view location, RemoteLocation* out);

// The URL a GET of `name` goes to. For s3, `endpoint` "" means AWS's virtual-hosted endpoint
// https://bucket.s3.<region>.amazonaws.com/key; a custom endpoint ("http://127.0.0.1:9000") is
// addressed path-style, endpoint/bucket/key, which every S3-compatible server understands.
std::string ObjectUrl(const RemoteLocation& loc, const std::string& endpoint,
                      const std::string& region, std::string_view name);

// Percent-encodes everything but RFC 3986's unreserved characters and '/' (S3 keys, paths).
std::string EncodePath(std::string_view path);

// "bytes=a-b" for the n bytes at offset (n > 0): the value of an HTTP Range header.
std::string RangeHeaderValue(uint64_t offset, uint64_t n);

// Parses a Content-Range header value "bytes a-b/total" (total may be "*"); false when it is not
// of that form.
bool ParseContentRange(std::string_view value, uint64_t* first, uint64_t* last);

}  // namespace sluice::storage
