#include "storage/url.h"

#include <algorithm>
#include <charconv>

namespace sluice::storage {
namespace {

std::string_view TrimSlashes(std::string_view s) {
  while (!s.empty() && s.front() == '/') s.remove_prefix(1);
  while (!s.empty() && s.back() == '/') s.remove_suffix(1);
  return s;
}

bool ParseU64(std::string_view s, uint64_t* v) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && p == s.data() + s.size();
}

bool IsSchemeChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '+' ||
         c == '-' || c == '.';
}

}  // namespace

std::string RedactUrl(std::string_view text) {
  std::string out;
  size_t done = 0;  // text[0, done) is in `out`
  for (size_t sep = text.find("://"); sep != std::string_view::npos;
       sep = text.find("://", sep + 3)) {
    if (sep == 0 || !IsSchemeChar(text[sep - 1])) continue;  // no scheme before it
    const size_t host = sep + 3;
    // The authority ends where the path, query or fragment starts, or where the URL ends in a
    // message. The last '@' in it ends the user info: an unencoded '@' in a password is common.
    const size_t end = std::min(text.find_first_of("/?#\"\n\t ", host), text.size());
    const std::string_view authority = text.substr(host, end - host);
    const size_t at = authority.rfind('@');
    if (at == std::string_view::npos) continue;
    const std::string_view user_info = authority.substr(0, at);
    const size_t colon = user_info.find(':');
    out.append(text.substr(done, host - done));
    if (colon == std::string_view::npos) out += "***";
    else out.append(user_info.substr(0, colon + 1)) += "***";
    done = host + at;  // from the '@' on
  }
  out.append(text.substr(done));
  return out;
}

Status ParseRemoteLocation(std::string_view location, RemoteLocation* out) {
  RemoteLocation loc;
  std::string_view rest;
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument(RedactUrl(location) + ": " + why +
                                   ". HINT: use http://host/prefix, https://host/prefix or "
                                   "s3://bucket/prefix");
  };
  if (location.starts_with("s3://")) {
    loc.kind = RemoteLocation::Kind::kS3;
    rest = location.substr(5);
    if (rest.starts_with("/")) return bad("no bucket name");
    rest = TrimSlashes(rest);
    const size_t slash = rest.find('/');
    loc.bucket = std::string(rest.substr(0, slash));
    if (slash != std::string_view::npos) loc.prefix = std::string(TrimSlashes(rest.substr(slash)));
    if (loc.bucket.empty()) return bad("no bucket name");
    loc.location = "s3://" + loc.bucket + (loc.prefix.empty() ? "" : "/" + loc.prefix);
  } else if (location.starts_with("http://") || location.starts_with("https://")) {
    const size_t scheme_end = location.find("://") + 3;
    rest = location.substr(scheme_end);
    while (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
    if (rest.empty() || rest.front() == '/') return bad("no host name");
    if (rest.find_first_of("?#") != std::string_view::npos)
      return bad("a dataset URL has no query or fragment");
    loc.base = std::string(location.substr(0, scheme_end)) + std::string(rest);
    loc.location = RedactUrl(loc.base);
  } else {
    return bad("not an http://, https:// or s3:// location");
  }
  *out = std::move(loc);
  return Status::OK();
}

std::string EncodePath(std::string_view path) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : path) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '_' || c == '.' || c == '~' || c == '/') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string ObjectUrl(const RemoteLocation& loc, const std::string& endpoint,
                      const std::string& region, std::string_view name) {
  if (loc.kind == RemoteLocation::Kind::kHttp) return loc.base + "/" + EncodePath(name);
  const std::string key =
      EncodePath(loc.prefix.empty() ? std::string(name) : loc.prefix + "/" + std::string(name));
  if (endpoint.empty()) return "https://" + loc.bucket + ".s3." + region + ".amazonaws.com/" + key;
  std::string_view e = endpoint;
  while (!e.empty() && e.back() == '/') e.remove_suffix(1);
  return std::string(e) + "/" + EncodePath(loc.bucket) + "/" + key;
}

std::string RangeHeaderValue(uint64_t offset, uint64_t n) {
  return "bytes=" + std::to_string(offset) + "-" + std::to_string(offset + n - 1);
}

bool ParseContentRange(std::string_view v, uint64_t* first, uint64_t* last) {
  while (!v.empty() && (v.back() == '\r' || v.back() == '\n' || v.back() == ' '))
    v.remove_suffix(1);
  if (!v.starts_with("bytes ")) return false;
  v.remove_prefix(6);
  const size_t dash = v.find('-'), slash = v.find('/');
  if (dash == std::string_view::npos || slash == std::string_view::npos || slash < dash)
    return false;
  uint64_t total = 0;
  const std::string_view t = v.substr(slash + 1);
  if (t != "*" && !ParseU64(t, &total)) return false;
  return ParseU64(v.substr(0, dash), first) &&
         ParseU64(v.substr(dash + 1, slash - dash - 1), last) && *first <= *last;
}

}  // namespace sluice::storage
