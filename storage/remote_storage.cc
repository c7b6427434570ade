#include "storage/remote_storage.h"

#include <algorithm>

#include "shards/checksum.h"
#include "storage/http_fetcher.h"
#include "storage/url.h"

namespace sluice::storage {
namespace {

class RemoteFile final : public RandomAccessFile {
 public:
  RemoteFile(std::shared_ptr<HttpFetcher> fetcher, std::string name, std::string url, uint64_t size)
      : fetcher_(std::move(fetcher)), name_(std::move(name)), url_(std::move(url)), size_(size) {}

  Status Read(uint64_t offset, size_t n, char* dst) const override {
    if (offset > size_ || n > size_ - offset) {
      return Status::IOError(name_ + ": read of " + std::to_string(n) + " bytes at offset " +
                             std::to_string(offset) + " runs past the end (" +
                             std::to_string(size_) + " bytes, as manifest.json says)");
    }
    return fetcher_->ReadRange(url_, offset, n, dst);
  }
  // Damaged bytes from a range fetched for more than them must not be served again (a reader
  // that reads them once more, such as the block cache, gets a new request).
  Status ReadVerified(uint64_t offset, size_t n, uint64_t xxh3, char* dst) const override {
    SLUICE_RETURN_IF_ERROR(Read(offset, n, dst));
    if (shards::Checksum(dst, n) != xxh3) fetcher_->Forget(url_, offset, n);
    return Status::OK();
  }
  uint64_t Size() const override { return size_; }
  const std::string& name() const override { return name_; }
  void WillNeed(uint64_t offset, size_t n) const override {
    if (offset >= size_) return;
    fetcher_->Prefetch(url_, offset, static_cast<size_t>(std::min<uint64_t>(n, size_ - offset)));
  }

 private:
  std::shared_ptr<HttpFetcher> fetcher_;
  std::string name_, url_;
  uint64_t size_;
};

class RemoteStorage final : public shards::Storage {
 public:
  RemoteStorage(RemoteLocation loc, std::string endpoint, std::string region,
                std::string credential_source, std::shared_ptr<HttpFetcher> fetcher)
      : loc_(std::move(loc)),
        endpoint_(std::move(endpoint)),
        region_(std::move(region)),
        credential_source_(std::move(credential_source)),
        fetcher_(std::move(fetcher)) {}

  const std::string& location() const override { return loc_.location; }
  std::string Where(const std::string& name) const override { return loc_.location + "/" + name; }
  Status ReadFile(const std::string& name, std::string* out) const override {
    return Explained(fetcher_->ReadWhole(Url(name), out));
  }
  Status OpenFile(const std::string& name, uint64_t expected_size,
                  std::unique_ptr<RandomAccessFile>* out) const override {
    *out = std::make_unique<RemoteFile>(fetcher_, Where(name), Url(name), expected_size);
    return Status::OK();
  }
  shards::StorageCounters Counters() const override { return fetcher_->Counters(); }

 private:
  std::string Url(const std::string& name) const {
    return ObjectUrl(loc_, endpoint_, region_, name);
  }
  // A 403 from S3 is nearly always the credentials or the region: say which were used.
  Status Explained(const Status& s) const {
    if (s.ok() || loc_.kind != RemoteLocation::Kind::kS3) return s;
    if (s.message().find("HTTP 403") == std::string::npos) return s;
    return Status::IOError(s.message() + ". HINT: S3 refused the request: check the credentials (" +
                           (credential_source_.empty() ? "none found: unsigned request"
                                                       : "from " + credential_source_) +
                           ") and the region (" + region_ + ")");
  }

  RemoteLocation loc_;
  std::string endpoint_, region_, credential_source_;
  std::shared_ptr<HttpFetcher> fetcher_;
};

}  // namespace

Status NewRemoteStorage(const std::string& location, const StorageOptions& options,
                        const EnvLookup& env, std::shared_ptr<const shards::Storage>* out) {
  RemoteLocation loc;
  SLUICE_RETURN_IF_ERROR(ParseRemoteLocation(location, &loc));
  FetcherOptions fo;
  fo.requests_in_flight = options.requests_in_flight;
  fo.retries = options.retries;
  fo.timeout_ms = options.timeout_ms;
  fo.min_rate = options.min_rate;
  std::string endpoint, region, source;
  if (loc.kind == RemoteLocation::Kind::kS3) {
    endpoint = ResolveEndpoint(options.endpoint, env);
    region = ResolveRegion(options.region, env);
    AwsCredentials creds;
    SLUICE_RETURN_IF_ERROR(Prefixed(ResolveCredentials(env, &creds), loc.location));
    if (!creds.empty()) {
      fo.aws_sigv4 = "aws:amz:" + region + ":s3";
      fo.userpwd = creds.access_key_id + ":" + creds.secret_access_key;
      if (!creds.session_token.empty())
        fo.headers.push_back("x-amz-security-token: " + creds.session_token);
      // S3 wants the payload hash header on every signed request; a GET has no payload.
      fo.headers.push_back("x-amz-content-sha256: UNSIGNED-PAYLOAD");
      source = creds.source;
    }
  }
  std::unique_ptr<HttpFetcher> fetcher;
  SLUICE_RETURN_IF_ERROR(HttpFetcher::Create(fo, &fetcher));
  *out = std::make_shared<RemoteStorage>(std::move(loc), std::move(endpoint), std::move(region),
                                         std::move(source), std::move(fetcher));
  return Status::OK();
}

}  // namespace sluice::storage
